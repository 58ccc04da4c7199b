/* SPDX-License-Identifier: Apache-2.0 */
/* convert_split.c - a binary STL or PLY converted to a tiled tree without holding the mesh: the
 * file is read in streaming passes and split by tile into a temporary file, and each tile is built
 * from its own part. The bytes are those of vx_convert_tiled on the loaded mesh.
 *
 * 1. Bounds: the usable triangles (formats/tri_stream.c's, the ones vx_mesh_load gives) counted
 *    and bounded: the grid, as vx_voxelize_transform makes it from the loaded mesh's box.
 * 2. Split: each triangle goes to every tile whose cell, grown by SPLIT_GROW voxels, its voxel
 *    range reaches, as a record (its index in the mesh, its 9 floats), counted and written on
 *    every core a piece at a time. Records gather in a buffer; a full buffer is sorted by (tile,
 *    index) and written as one run a tile, so a tile's runs in file order hold its triangles in
 *    the mesh's order.
 * 3. Tiles: the pool's workers (convert_tiled.c) each read a part, drop its exact copies, plan it
 *    with the whole mesh's grid (vx_tile_plan_init_fixed) and build its tile. A copy of a
 *    triangle reaches the tiles its original reaches, so each part's duplicate marks
 *    (vx_soup_dedup_marks, the first copy kept) are the whole mesh's for its triangles: they are
 *    set in one bit a triangle as the parts are read.
 * 4. The build id, once every tile is in (the tiled writer writes its header last): the kept
 *    triangles hashed in order in a third pass (vx_tiled_id_*), as vx_tiled_build_id hashes the
 *    deduplicated mesh.
 *
 * Why a part gives its tile's bytes, with the pseudo-normal rule: the tile's list (the triangles
 * reaching its cell grown by the one-voxel halo, tri_pairs' test) is in the part, in the same
 * order; a corner of a surface voxel is within sqrt(3) voxels of the triangle that makes the voxel
 * a surface voxel, so its closest point q is within 2 voxels of the cell, and every triangle
 * through q's vertex or edge contains q: it is in the part, and the part's pseudo-normals there are
 * sums over the same triangles in the same order. The winding number's sign needs every triangle
 * of the mesh at every corner, so the winding rule is not split (the caller loads the mesh).
 */
#define _POSIX_C_SOURCE 200809L
#include "lib/convert_split.h"
#include "formats/svo_tiled.h"
#include "formats/tri_stream.h"
#include "lib/convert_tiled.h"
#include "sys/sort.h"
#include "sys/system.h"
#include "voxelizer/overlap.h"

#include <errno.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Voxels a tile's cell grows by for its part: the one-voxel halo, 2 for the closest features'
 * triangles, 1 to spare. */
#define SPLIT_GROW 4
#define SPLIT_REC 40 /* bytes of a record in the file: the triangle's index, its 9 floats */

typedef struct split_rec { /* a record in the buffer */
  uint64_t code;
  uint32_t tri;
  float p[9];
} split_rec;

typedef struct split_run {
  uint64_t code, at, n; /* the tile, the run's byte offset, its records */
} split_run;

typedef struct vx_split {
  const char *path;
  vx_convert_opts o;
  char *tmp_dir;
  int fd;                 /* the parts' file, nameless */
  uint64_t bytes;         /* written to it */
  vx_soup tally;          /* the usable triangles' count and bounds, what was dropped */
  vx_transform xf;
  uint32_t D, T;
  float band;
  split_run *runs;        /* by (tile, offset) once split */
  uint64_t nruns, cap;
  uint64_t *first;        /* tile k's runs: runs[first[k] .. first[k + 1]) */
  uint64_t records, max_part;
  atomic_uchar *dup;      /* a bit a triangle: a copy of an earlier one (set by the tiles) */
  uint64_t dropped;
  vx_tile_plan shell;     /* the pool's plan: options, tiles, header; no mesh */
  vx_tile_fixed fx;
  double sec[3];          /* bounds, split, id */
} vx_split;

static int cmp_rec(const void *a, const void *b) {
  const split_rec *x = (const split_rec *)a, *y = (const split_rec *)b;
  if (x->code != y->code) return x->code < y->code ? -1 : 1;
  return x->tri < y->tri ? -1 : x->tri > y->tri;
}

static int cmp_run(const void *a, const void *b) {
  const split_run *x = (const split_run *)a, *y = (const split_run *)b;
  if (x->code != y->code) return x->code < y->code ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

static vx_status io_fail(const vx_split *sp, const char *what, ssize_t got, vx_error *err) {
  return vx_error_set(err, VX_ERR_IO, "cannot %s the mesh's parts in '%s': %s", what,
                      sp->tmp_dir, got < 0 ? strerror(errno) : "no space");
}

static vx_status put(vx_split *sp, const void *p, uint64_t n, vx_error *err) {
  const uint8_t *b = (const uint8_t *)p;
  while (n) {
    ssize_t w = pwrite(sp->fd, b, (size_t)(n < (1u << 30) ? n : (1u << 30)), (off_t)sp->bytes);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return io_fail(sp, "write", w, err);
    b += w;
    n -= (uint64_t)w;
    sp->bytes += (uint64_t)w;
  }
  return VX_OK;
}

static vx_status get(const vx_split *sp, uint64_t at, void *p, uint64_t n, vx_error *err) {
  uint8_t *b = (uint8_t *)p;
  while (n) {
    ssize_t r = pread(sp->fd, b, (size_t)(n < (1u << 30) ? n : (1u << 30)), (off_t)at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return io_fail(sp, "read", r, err);
    b += r;
    n -= (uint64_t)r;
    at += (uint64_t)r;
  }
  return VX_OK;
}

static vx_status cancelled(const vx_split *sp, const char *stage, double frac, vx_error *err) {
  if (sp->o.progress && sp->o.progress(sp->o.user, stage, frac))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "conversion cancelled");
  return VX_OK;
}

/* What a pass does with each piece of the file's usable triangles: n of them, the first being
 * triangle `base` of the mesh. */
typedef vx_status (*piece_fn)(void *ctx, const vx_soup *piece, uint64_t base, vx_error *err);

/* One streaming pass over the file, a piece at a time to fn (NULL: none), its progress under
 * `stage`. tally (NULL: the pass's own) receives the count, bounds and drops; a later pass (tally
 * NULL) must see the first pass's count, or the file changed. */
static vx_status read_pieces(const vx_split *sp, const char *stage, vx_soup *tally, piece_fn fn,
                             void *ctx, vx_error *err) {
  vx_soup own, piece;
  vx_soup *t = tally ? tally : &own;
  memset(t, 0, sizeof *t);
  memset(&piece, 0, sizeof piece);
  for (int i = 0; i < 3; i++) t->bbox_min[i] = INFINITY, t->bbox_max[i] = -INFINITY;
  vx_tri_pieces *tp = NULL;
  uint64_t faces = 0, base = 0;
  vx_status s = vx_tri_pieces_open(sp->path, &tp, &faces, err);
  for (uint64_t got = 1; s == VX_OK && got;) {
    const float *tri = NULL;
    s = vx_tri_pieces_next(tp, t, &tri, &got, err);
    piece.pos = (float *)tri;
    piece.tri_count = got;
    if (s == VX_OK && got && fn) s = fn(ctx, &piece, base, err);
    base += got;
    if (s == VX_OK && faces) s = cancelled(sp, stage, (double)base / (double)faces, err);
  }
  vx_tri_pieces_close(tp);
  if (s == VX_OK && !tally && base != sp->tally.tri_count)
    s = vx_error_set(err, VX_ERR_IO, "'%s' changed while it was read", sp->path);
  return s;
}

/* Pass 1: the usable triangles' count and bounds; the grid. */
static vx_status pass_bounds(vx_split *sp, vx_error *err) {
  vx_status s = read_pieces(sp, "reading", &sp->tally, NULL, NULL, err);
  if (s != VX_OK) return s;
  sp->tally.mesh_count = 1;
  if (sp->tally.tri_count == 0)
    return vx_error_set(err, VX_ERR_EMPTY, "'%s' has no usable triangles (dropped %llu "
                        "degenerate, %llu non-finite)", sp->path,
                        (unsigned long long)sp->tally.skipped_degenerate,
                        (unsigned long long)sp->tally.skipped_nonfinite);
  if (sp->tally.tri_count >= UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "'%s': more than 2^32 triangles", sp->path);
  s = vx_voxelize_transform(&sp->tally, sp->o.resolution, &sp->xf, err);
  if (s != VX_OK) return s;
  sp->D = 0;
  while ((1u << sp->D) < sp->o.resolution) sp->D++;
  sp->T = sp->o.tile_depth;
  sp->band = sp->o.band;
  if (sp->T >= sp->D || sp->D - sp->T > VX_MAX_DEPTH - 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tiles of %u^3 in a %u^3 grid: a tile is smaller "
                        "than the grid and leaves at most %d levels above it", 1u << sp->T,
                        1u << sp->D, VX_MAX_DEPTH - 1);
  return VX_OK;
}

static vx_status add_run(vx_split *sp, uint64_t code, uint64_t at, uint64_t n, vx_error *err) {
  if (sp->nruns == sp->cap) {
    const uint64_t cap = sp->cap ? 2 * sp->cap : 1024;
    split_run *r = (split_run *)vx_realloc(sp->runs, (size_t)cap * sizeof *r);
    if (!r) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    sp->runs = r;
    sp->cap = cap;
  }
  split_run *r = &sp->runs[sp->nruns++];
  r->code = code;
  r->at = at;
  r->n = n;
  return VX_OK;
}

/* The buffer's records sorted and written, one run a tile. */
static vx_status flush(vx_split *sp, split_rec *buf, uint64_t n, uint8_t *out, vx_error *err) {
  vx_sort_parallel(buf, (size_t)n, sizeof *buf, cmp_rec, sp->o.threads);
  for (uint64_t a = 0; a < n;) {
    uint64_t b = a;
    while (b < n && buf[b].code == buf[a].code) b++;
    vx_status s = add_run(sp, buf[a].code, sp->bytes, b - a, err);
    for (uint64_t i = a; s == VX_OK && i < b;) { /* packed a slice at a time */
      const uint64_t k = b - i < (1u << 16) ? b - i : (1u << 16);
      for (uint64_t q = 0; q < k; q++) {
        memcpy(out + q * SPLIT_REC, &buf[i + q].tri, 4);
        memcpy(out + q * SPLIT_REC + 4, buf[i + q].p, 36);
      }
      s = put(sp, out, k * SPLIT_REC, err);
      i += k;
    }
    if (s != VX_OK) return s;
    a = b;
  }
  return VX_OK;
}

/* The tiles triangle t of a piece reaches, grown by SPLIT_GROW: the box a..b of cells; 0 when
 * none (outside the grid). */
static int tri_cells(const vx_split *sp, const vx_soup *piece, uint64_t t, int64_t a[3],
                     int64_t b[3]) {
  const int64_t R = (int64_t)1 << sp->D, nt = (int64_t)1 << (sp->D - sp->T);
  double g[9];
  int64_t lo[3], hi[3];
  vx_grid_tri(piece, &sp->xf, t, g);
  if (!vx_tri_voxel_range(g, R, lo, hi)) return 0;
  for (int i = 0; i < 3; i++) {
    a[i] = lo[i] - SPLIT_GROW < 0 ? 0 : (lo[i] - SPLIT_GROW) >> sp->T;
    b[i] = (hi[i] + SPLIT_GROW) >> sp->T;
    if (b[i] > nt - 1) b[i] = nt - 1;
  }
  return 1;
}

/* Triangle t's records into out (NULL: counted only); their number. */
static uint64_t tri_records(const vx_split *sp, const vx_soup *piece, uint64_t t, uint32_t index,
                            split_rec *out) {
  int64_t a[3], b[3];
  if (!tri_cells(sp, piece, t, a, b)) return 0;
  if (!out) return (uint64_t)(b[0] - a[0] + 1) * (uint64_t)(b[1] - a[1] + 1) *
                   (uint64_t)(b[2] - a[2] + 1);
  uint64_t k = 0;
  for (int64_t z = a[2]; z <= b[2]; z++)
    for (int64_t y = a[1]; y <= b[1]; y++)
      for (int64_t x = a[0]; x <= b[0]; x++, k++) {
        out[k].code = vx_morton_encode((uint32_t)x, (uint32_t)y, (uint32_t)z);
        out[k].tri = index;
        memcpy(out[k].p, piece->pos + 9 * t, sizeof out[k].p);
      }
  return k;
}

/* A piece's records on every core: counted by ranges of triangles, then the ranges that fit
 * the buffer written where each starts. */
typedef struct split_job {
  const vx_split *sp;
  const vx_soup *piece;
  uint64_t base;          /* the piece's first triangle in the mesh */
  uint64_t first;         /* fill: the first triangle of the ranges filled */
  uint64_t *count, *at;   /* per range: its records; where they start in out */
  split_rec *out;
} split_job;

static void count_range(void *ctx, uint64_t a, uint64_t b) {
  split_job *j = (split_job *)ctx;
  uint64_t n = 0;
  for (uint64_t t = a; t < b; t++) n += tri_records(j->sp, j->piece, t, 0, NULL);
  j->count[a / VX_RANGE_CHUNK] = n;
}

static void fill_range(void *ctx, uint64_t a, uint64_t b) {
  split_job *j = (split_job *)ctx;
  a += j->first;
  b += j->first;
  split_rec *o = j->out + j->at[a / VX_RANGE_CHUNK];
  for (uint64_t t = a; t < b; t++) o += tri_records(j->sp, j->piece, t, (uint32_t)(j->base + t), o);
}

static _Atomic uint64_t test_buffer; /* vx_split_test_buffer's */

void vx_split_test_buffer(uint64_t records) { atomic_store(&test_buffer, records); }

/* Pass 2's state: the record buffer, the ranges of the piece at hand. */
typedef struct split_pass {
  vx_split *sp;
  split_rec *buf;
  uint64_t cap, n, records; /* the buffer's room, what it holds, what was written */
  uint8_t *out;             /* packing for the file */
  uint64_t *count, *at;
} split_pass;

static vx_status flush_pass(split_pass *q, vx_error *err) {
  q->records += q->n;
  vx_status s = q->n ? flush(q->sp, q->buf, q->n, q->out, err) : VX_OK;
  q->n = 0;
  return s;
}

/* A piece's records: ranges of triangles counted and written on every core while they fit the
 * buffer, which is written out when the next range does not fit. */
static vx_status split_piece(void *ctx, const vx_soup *piece, uint64_t base, vx_error *err) {
  split_pass *q = (split_pass *)ctx;
  const vx_split *sp = q->sp;
  const uint64_t got = piece->tri_count;
  if (got > (UINT64_C(1) << 20)) /* the reader's pieces are smaller */
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a piece of %llu triangles",
                        (unsigned long long)got);
  split_job j = {sp, piece, base, 0, q->count, q->at, q->buf};
  const uint64_t ranges = (got + VX_RANGE_CHUNK - 1) / VX_RANGE_CHUNK;
  vx_ranges_run(sp->o.threads, got, count_range, &j);
  vx_status s = VX_OK;
  for (uint64_t r = 0; s == VX_OK && r < ranges;) {
    uint64_t e = r; /* ranges r..e-1 fit the buffer */
    while (e < ranges && q->n + q->count[e] <= q->cap) {
      q->at[e] = q->n;
      q->n += q->count[e++];
    }
    if (e > r) { /* filled on every core */
      j.first = r * VX_RANGE_CHUNK;
      const uint64_t t1 = e * VX_RANGE_CHUNK < got ? e * VX_RANGE_CHUNK : got;
      vx_ranges_run(sp->o.threads, t1 - j.first, fill_range, &j);
      r = e;
    } else if (q->n) { /* the next range does not fit: write the buffer, then try it again */
      s = flush_pass(q, err);
    } else { /* one range's records alone exceed the buffer (triangles over very many tiles):
              * one triangle at a time, writing the buffer as it fills */
      const uint64_t t1 = (r + 1) * VX_RANGE_CHUNK < got ? (r + 1) * VX_RANGE_CHUNK : got;
      for (uint64_t t = r * VX_RANGE_CHUNK; s == VX_OK && t < t1; t++) {
        const uint64_t k = tri_records(sp, piece, t, 0, NULL);
        if (k > q->cap)
          s = vx_error_set(err, VX_ERR_LIMIT, "a triangle reaches %llu tiles: more than the "
                           "memory limit's buffer holds (use larger tiles)",
                           (unsigned long long)k);
        if (s == VX_OK && q->n + k > q->cap) s = flush_pass(q, err);
        if (s == VX_OK) q->n += tri_records(sp, piece, t, (uint32_t)(base + t), q->buf + q->n);
      }
      r++;
    }
  }
  return s;
}

/* Pass 2: every triangle to the parts of the tiles it reaches. */
static vx_status pass_split(vx_split *sp, vx_error *err) {
  const uint64_t most = (UINT64_C(512) << 20) / sizeof(split_rec);
  split_pass q;
  memset(&q, 0, sizeof q);
  q.sp = sp;
  q.cap = sp->o.mem_limit / 8 / sizeof(split_rec);
  if (q.cap > most) q.cap = most;
  if (q.cap < 65536) q.cap = 65536;
  if (atomic_load(&test_buffer)) q.cap = atomic_load(&test_buffer);
  const uint64_t nr = (UINT64_C(1) << 20) / VX_RANGE_CHUNK + 1; /* ranges of a piece, at most */
  q.buf = (split_rec *)vx_malloc((size_t)q.cap * sizeof *q.buf);
  q.out = (uint8_t *)vx_malloc((size_t)(1u << 16) * SPLIT_REC);
  q.count = (uint64_t *)vx_malloc((size_t)nr * sizeof *q.count);
  q.at = (uint64_t *)vx_malloc((size_t)nr * sizeof *q.at);
  vx_status s = q.buf && q.out && q.count && q.at
                    ? read_pieces(sp, "splitting", NULL, split_piece, &q, err)
                    : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s == VX_OK) s = flush_pass(&q, err);
  vx_free(q.buf);
  vx_free(q.out);
  vx_free(q.count);
  vx_free(q.at);
  if (s != VX_OK) return s;
  const uint64_t records = q.records;
  sp->records = records;
  qsort(sp->runs, (size_t)sp->nruns, sizeof *sp->runs, cmp_run);
  uint64_t ntiles = 0;
  for (uint64_t i = 0; i < sp->nruns; i++)
    ntiles += i == 0 || sp->runs[i].code != sp->runs[i - 1].code;
  sp->first = (uint64_t *)vx_malloc((size_t)(ntiles + 1) * sizeof *sp->first);
  sp->shell.work = (double *)vx_calloc((size_t)(ntiles ? ntiles : 1), sizeof(double));
  if (!sp->first || !sp->shell.work) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  for (uint64_t i = 0, k = 0; i <= sp->nruns; i++) {
    if (i == sp->nruns || i == 0 || sp->runs[i].code != sp->runs[i - 1].code) sp->first[k++] = i;
    if (i < sp->nruns) sp->shell.work[k - 1] += (double)sp->runs[i].n;
  }
  for (uint64_t k = 0; k < ntiles; k++)
    if (sp->shell.work[k] > (double)sp->max_part) sp->max_part = (uint64_t)sp->shell.work[k];
  sp->shell.ntiles = ntiles;
  return VX_OK;
}

/* Tile k's part: its triangles in the mesh's order (a soup, bounds set), and their indices in
 * the mesh when idx is not NULL (vx_free'd by the caller). */
static vx_status read_part(const vx_split *sp, uint64_t k, vx_soup *part, uint32_t **idx,
                           vx_error *err) {
  memset(part, 0, sizeof *part);
  uint64_t n = 0;
  for (uint64_t i = sp->first[k]; i < sp->first[k + 1]; i++) n += sp->runs[i].n;
  uint8_t *raw = (uint8_t *)vx_malloc((size_t)n * SPLIT_REC);
  float *pos = (float *)vx_malloc((size_t)n * 9 * sizeof(float));
  uint32_t *ix = idx ? (uint32_t *)vx_malloc((size_t)n * 4) : NULL;
  vx_status s = raw && pos && (ix || !idx)
                    ? VX_OK
                    : vx_error_set(err, VX_ERR_NOMEM, "out of memory for a part of %llu triangles",
                                   (unsigned long long)n);
  for (uint64_t i = sp->first[k], m = 0; s == VX_OK && i < sp->first[k + 1]; i++) {
    s = get(sp, sp->runs[i].at, raw + m * SPLIT_REC, sp->runs[i].n * SPLIT_REC, err);
    m += sp->runs[i].n;
  }
  for (uint64_t t = 0; s == VX_OK && t < n; t++) {
    if (ix) memcpy(ix + t, raw + t * SPLIT_REC, 4);
    memcpy(pos + 9 * t, raw + t * SPLIT_REC + 4, 36);
  }
  vx_free(raw);
  if (s != VX_OK) {
    vx_free(ix);
    vx_free(pos);
    return s;
  }
  part->pos = pos; /* usable, every one (the first pass's filter) */
  part->tri_count = n;
  for (int i = 0; i < 3; i++) part->bbox_min[i] = INFINITY, part->bbox_max[i] = -INFINITY;
  for (uint64_t c = 0; c < 3 * n; c++)
    for (int i = 0; i < 3; i++) {
      const double x = pos[3 * c + i];
      if (x < part->bbox_min[i]) part->bbox_min[i] = x;
      if (x > part->bbox_max[i]) part->bbox_max[i] = x;
    }
  part->mesh_count = 1;
  if (idx) *idx = ix;
  return VX_OK;
}

typedef struct id_pass {
  const vx_split *sp;
  vx_tiled_id *h;
} id_pass;

/* A piece's kept triangles into the id, a run of them at a time. */
static vx_status hash_piece(void *ctx, const vx_soup *piece, uint64_t base, vx_error *err) {
  const id_pass *q = (const id_pass *)ctx;
  for (uint64_t a = 0; a < piece->tri_count;) {
    uint64_t b = a;
    while (b < piece->tri_count &&
           !(atomic_load(&q->sp->dup[(base + b) >> 3]) >> ((base + b) & 7) & 1))
      b++;
    if (b > a && !vx_tiled_id_feed(q->h, piece->pos + 9 * a, (size_t)(b - a) * 9 * sizeof(float)))
      return vx_error_set(err, VX_ERR_NOMEM, "out of memory hashing the triangles");
    a = b + 1;
  }
  return VX_OK;
}

/* Pass 3, once every tile is built (the pool's source): the build id over the kept triangles,
 * in order. */
static vx_status pass_id(void *ctx, uint64_t *id, vx_error *err) {
  vx_split *sp = (vx_split *)ctx;
  const double t0 = vx_clock_seconds();
  sp->dropped = 0;
  for (uint64_t i = 0; i <= sp->tally.tri_count / 8; i++)
    sp->dropped += (uint64_t)__builtin_popcount(atomic_load(&sp->dup[i]));
  sp->shell.dropped = sp->dropped;
  id_pass q = {sp, vx_tiled_id_begin()};
  vx_status s = q.h ? read_pieces(sp, "hashing", NULL, hash_piece, &q, err)
                    : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  *id = vx_tiled_id_end(q.h, sp->D, sp->T, sp->band, sp->o.sign_rule,
                        sp->o.max_error > 0.0f ? sp->o.max_error : 0.0f);
  sp->sec[2] = vx_clock_seconds() - t0;
  return s;
}

/* The part's exact copies: marked in the mesh's bits (a copy reaches the tiles its original
 * reaches, so each part's marks are the whole mesh's for its triangles) and dropped. */
static vx_status drop_copies(vx_split *sp, vx_soup *part, const uint32_t *idx, vx_error *err) {
  uint8_t *drop = (uint8_t *)vx_malloc((size_t)part->tri_count + 1);
  uint64_t nd = 0;
  vx_status s = drop ? vx_soup_dedup_marks(part, sp->o.threads, drop, &nd, err)
                     : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  uint64_t w = 0;
  for (uint64_t t = 0; s == VX_OK && nd && t < part->tri_count; t++) {
    if (drop[t]) {
      atomic_fetch_or(&sp->dup[idx[t] >> 3], (unsigned char)(1u << (idx[t] & 7)));
      continue;
    }
    if (w != t) memmove(part->pos + 9 * w, part->pos + 9 * t, 9 * sizeof(float));
    w++;
  }
  if (s == VX_OK && nd) part->tri_count = w; /* the same bounds: the same vertices */
  vx_free(drop);
  return s;
}

/* The pool's source: tile k built from its part. */
static vx_status build_part(void *ctx, vx_voxelize_opts *bo, uint64_t k, vx_octree_prealloc *pre,
                           vx_tile_out *r, vx_error *err) {
  vx_split *sp = (vx_split *)ctx;
  const uint64_t code = sp->runs[sp->first[k]].code;
  memset(r, 0, sizeof *r);
  vx_soup part;
  uint32_t *idx = NULL;
  vx_status s = read_part(sp, k, &part, &idx, err);
  if (s == VX_OK) s = drop_copies(sp, &part, idx, err);
  vx_free(idx);
  if (s != VX_OK) {
    vx_soup_free(&part);
    return s;
  }
  vx_convert_opts o = sp->o;
  o.threads = bo->threads;
  if (!bo->gpu) o.device = VX_DEVICE_CPU; /* this worker fell back */
  vx_tile_plan q;
  s = vx_tile_plan_init_fixed(&q, &part, &o, sp->tmp_dir, &sp->fx, err); /* fx.unique */
  uint64_t lo = 0, hi = q.ntiles; /* the tile's place among the part's */
  while (s == VX_OK && lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (vx_tile_plan_code(&q, mid) < code) lo = mid + 1;
    else hi = mid;
  }
  if (s == VX_OK && (lo == q.ntiles || vx_tile_plan_code(&q, lo) != code)) {
    r->code = code; /* no triangle of the part reaches the tile's halo: no surface */
    r->empty = 1;
  } else if (s == VX_OK) {
    uint32_t *tris = (uint32_t *)vx_malloc((size_t)(q.max_tris ? q.max_tris : 1) * 4);
    vx_voxelize_opts qbo = q.bo;
    qbo.threads = bo->threads;
    s = tris ? vx_tile_plan_run(&q, &qbo, lo, tris, pre, NULL, r, err)
             : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    vx_free(tris);
    if (q.fell_back) { /* the same bytes on the CPU; noted once */
      bo->gpu = 0;
      pthread_mutex_lock(&sp->shell.mu);
      if (!sp->shell.fell_back) sp->shell.note = q.note;
      sp->shell.fell_back = 1;
      pthread_mutex_unlock(&sp->shell.mu);
    }
  }
  vx_tile_plan_release(&q);
  vx_soup_free(&part);
  return s;
}

int vx_split_applies(const vx_convert_opts *o) {
  return o->tile_depth > 0 && o->sign_rule == VX_SIGN_PSEUDO_NORMAL;
}

vx_status vx_convert_split(const char *mesh_path, const vx_convert_opts *o, const char *out_path,
                           const char *tmp_dir, vx_mesh_info *info, vx_conversion *b,
                           vx_error *err) {
  const double t0 = vx_clock_seconds();
  vx_split *sp = (vx_split *)vx_calloc(1, sizeof *sp);
  if (!sp) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  sp->path = mesh_path;
  sp->o = *o;
  sp->fd = -1;
  sp->tmp_dir = vx_strdup(tmp_dir);
  vx_status s = sp->tmp_dir ? VX_OK : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s == VX_OK) s = pass_bounds(sp, err);
  const double t1 = vx_clock_seconds();
  sp->sec[0] = t1 - t0;
  if (info) {
    info->triangles = sp->tally.tri_count;
    info->meshes = 1;
    for (int i = 0; i < 3; i++) {
      info->bbox_min[i] = sp->tally.bbox_min[i];
      info->bbox_max[i] = sp->tally.bbox_max[i];
    }
    info->skipped_degenerate = sp->tally.skipped_degenerate;
    info->skipped_nonfinite = sp->tally.skipped_nonfinite;
    info->skipped_nontriangle = sp->tally.skipped_nontriangle;
    info->load_seconds = sp->sec[0];
  }
  const int read_once = s == VX_OK; /* from here VX_ERR_FORMAT is not "assimp's file" */
  if (s == VX_OK) s = vx_tile_plan_shell(&sp->shell, o, tmp_dir, err);
  if (s == VX_OK) {
    char name[4200];
    snprintf(name, sizeof name, "%s/.voxlod-parts-XXXXXX", tmp_dir);
    sp->fd = mkstemp(name);
    if (sp->fd < 0)
      s = vx_error_set(err, VX_ERR_IO, "cannot create a temporary file in '%s': %s", tmp_dir,
                       strerror(errno));
    else
      unlink(name); /* nameless: closing it (or dying) frees its blocks */
  }
  if (s == VX_OK) s = pass_split(sp, err);
  sp->sec[1] = vx_clock_seconds() - t1;
  if (s == VX_OK) {
    sp->dup = (atomic_uchar *)vx_calloc((size_t)(sp->tally.tri_count / 8 + 1), 1);
    if (!sp->dup) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  if (s == VX_OK) {
    sp->fx.xf = sp->xf;
    sp->fx.unique = 1; /* each part's copies are dropped as it is read */
    vx_tiled_header *h = &sp->shell.h;
    h->depth = sp->D;
    h->tile_depth = sp->T;
    h->band = sp->band;
    h->prune_error = sp->shell.bo.max_error;
    h->xf = sp->xf;
    h->build_id = 0; /* provisional: pass_id's once the tiles are in */
    char bytes[32];
    vx_notes_add(&b->notes, "split by tile without holding the mesh: read %.2fs, split %.2fs "
                 "(%llu records in %llu parts, %s in a temporary file; the largest part %llu "
                 "triangles)", sp->sec[0], sp->sec[1], (unsigned long long)sp->records,
                 (unsigned long long)sp->shell.ntiles,
                 vx_bytes_text((double)sp->bytes, bytes, sizeof bytes),
                 (unsigned long long)sp->max_part);
    vx_tile_source src = {build_part, pass_id, sp};
    s = vx_tile_pool_run(&sp->shell, &src, o, out_path, NULL, sp->tally.tri_count, t0, b, err);
  }
  if (s == VX_OK) {
    b->stats.triangles -= sp->dropped;
    vx_notes_add(&b->notes, "split: the build id over the kept triangles %.2fs (a third pass, "
                 "after the tiles)", sp->sec[2]);
  }
  if (s == VX_ERR_FORMAT && read_once)
    s = vx_error_set(err, VX_ERR_IO, "'%s' changed while it was read", mesh_path);
  if (sp->fd >= 0) close(sp->fd);
  vx_tile_plan_release(&sp->shell);
  vx_free(sp->runs);
  vx_free(sp->first);
  vx_free(sp->dup);
  vx_free(sp->tmp_dir);
  vx_free(sp);
  return s;
}
