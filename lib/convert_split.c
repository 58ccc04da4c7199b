/* SPDX-License-Identifier: Apache-2.0 */
/* convert_split.c - a binary STL or PLY converted to a tiled tree without holding the mesh: the
 * file is read in streaming passes and split by tile into a temporary file, and each tile is built
 * from its own part. The bytes are those of vx_convert_tiled on the loaded mesh.
 *
 * 1. Bounds: the usable triangles (formats/tri_stream.c's, the ones vx_mesh_load gives) counted,
 *    bounded and hashed in order: the grid, as vx_voxelize_transform makes it from the loaded
 *    mesh's box, and the build id, as vx_tiled_build_id makes it from the loaded mesh (exact
 *    copies included: they are known only once the parts are read).
 * 2. Split: each triangle goes to every tile whose cell, grown by SPLIT_GROW voxels, its voxel
 *    range reaches, as a record (its index in the mesh, its 9 floats), counted and written on
 *    every core a piece at a time. Records gather in a buffer; a full buffer is sorted by (tile,
 *    index) and written as one run a tile, so a tile's runs in file order hold its triangles in
 *    the mesh's order.
 * 3. Tiles: the pool's workers (convert_tiled.c) each read a part, drop its exact copies, plan it
 *    with the whole mesh's grid (vx_tile_plan_init_fixed) and build its tile. A copy of a
 *    triangle reaches the tiles its original reaches, so each part's duplicate marks
 *    (vx_soup_dedup_marks, the first copy kept) are the whole mesh's for its triangles: they are
 *    set in one bit a triangle as the parts are read, and counted once every tile is in.
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
#include "formats/tile_split.h"
#include "formats/tri_stream.h"
#include "lib/convert_tiled.h"
#include "sys/atomic_file.h"
#include "sys/sort.h"
#include "sys/system.h"
#include "voxelizer/overlap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Voxels a tile's cell grows by for its part: the one-voxel halo, 2 for the closest features'
 * triangles, 1 to spare. */
#define SPLIT_GROW 4

typedef struct split_rec { /* a record in the buffer */
  uint64_t code;
  uint32_t tri;
  float p[9];
} split_rec;

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
  vx_split_run *runs;        /* by (tile, offset) once split */
  uint64_t nruns, cap;
  uint64_t *first;        /* tile k's runs: runs[first[k] .. first[k + 1]) */
  uint64_t records, max_part;
  atomic_uchar *dup;      /* a bit a triangle: a copy of an earlier one (set by the tiles) */
  uint64_t dropped;
  vx_tile_plan own, *pl;  /* the pool's plan (options, tiles, header; no mesh): own, or the
                             public plan of a parts file */
  int named;              /* the parts are a file for other processes (vx_tile_split): runs
                             checked as they are written and read */
  const char *name;       /* the parts file's, for messages */
  vx_split_head head;     /* what the records need checked against: the mesh's triangles */
  vx_tile_fixed fx;
  uint64_t build_id;      /* pass 1's */
  double sec[2];          /* bounds (with the id), split */
} vx_split;

static int cmp_run(const void *a, const void *b) {
  const vx_split_run *x = (const vx_split_run *)a, *y = (const vx_split_run *)b;
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

/* A piece's triangles into the build id (ctx), in the mesh's order. */
static vx_status hash_piece(void *ctx, const vx_soup *piece, uint64_t base, vx_error *err) {
  (void)base;
  const size_t bytes = (size_t)piece->tri_count * 9 * sizeof(float);
  if (!vx_tiled_id_feed((vx_tiled_id *)ctx, piece->pos, bytes))
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory hashing the triangles");
  return VX_OK;
}

/* Pass 1: the usable triangles' count and bounds, hashed in order; the grid and the build id. */
static vx_status pass_bounds(vx_split *sp, vx_error *err) {
  sp->D = 0;
  while ((1u << sp->D) < sp->o.resolution) sp->D++;
  sp->T = sp->o.tile_depth;
  sp->band = sp->o.band;
  vx_tiled_id *id = vx_tiled_id_begin();
  vx_status s = id ? read_pieces(sp, "reading", &sp->tally, hash_piece, id, err)
                   : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  sp->build_id = vx_tiled_id_end(id, sp->D, sp->T, sp->band, sp->o.sign_rule,
                                 sp->o.max_error > 0.0f ? sp->o.max_error : 0.0f); /* frees id */
  if (s != VX_OK) return s;
  if (!sp->build_id) return vx_error_set(err, VX_ERR_NOMEM, "out of memory hashing the triangles");
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
  if (sp->T >= sp->D || sp->D - sp->T > VX_MAX_DEPTH - 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tiles of %u^3 in a %u^3 grid: a tile is smaller "
                        "than the grid and leaves at most %d levels above it", 1u << sp->T,
                        1u << sp->D, VX_MAX_DEPTH - 1);
  return VX_OK;
}

static vx_status add_run(vx_split *sp, uint64_t code, uint64_t at, uint64_t n, vx_error *err) {
  if (sp->nruns == sp->cap) {
    const uint64_t cap = sp->cap ? 2 * sp->cap : 1024;
    vx_split_run *r = (vx_split_run *)vx_realloc(sp->runs, (size_t)cap * sizeof *r);
    if (!r) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    sp->runs = r;
    sp->cap = cap;
  }
  vx_split_run *r = &sp->runs[sp->nruns++];
  r->code = code;
  r->at = at;
  r->n = n;
  r->check = 0;
  return VX_OK;
}

/* A flush's records packed for the file and its new runs checked, on every core. */
typedef struct flush_job {
  const split_rec *r;
  uint8_t *packed;
  vx_split_run *runs; /* the flush's runs, `at` relative to the buffer */
  atomic_int failed;
} flush_job;

static void pack_range(void *ctx, uint64_t a, uint64_t b) {
  const flush_job *j = (const flush_job *)ctx;
  for (uint64_t i = a; i < b; i++)
    vx_split_record_put(j->packed + i * VX_SPLIT_RECORD, j->r[i].tri, j->r[i].p);
}

static void check_run(void *ctx, uint64_t k) {
  flush_job *j = (flush_job *)ctx;
  vx_split_run *u = &j->runs[k];
  vx_error e;
  if (vx_svo_encoded_check(j->packed + u->at * VX_SPLIT_RECORD, (size_t)u->n * VX_SPLIT_RECORD,
                           &u->check, &e) != VX_OK)
    atomic_store(&j->failed, 1);
}

/* The buffer's n records grouped by tile in their order (a stable sort on the tile's code: the
 * order (code, triangle)), packed into the other buffer, each tile's a run (checked for a named
 * file), and written. */
static vx_status flush(vx_split *sp, split_rec *buf, split_rec *tmp, uint64_t n, vx_error *err) {
  const split_rec *r = (const split_rec *)vx_radix_sort(buf, tmp, (size_t)n, sizeof *buf,
                                                        offsetof(split_rec, code),
                                                        3 * (sp->D - sp->T), sp->o.threads);
  if (!r) return vx_error_set(err, VX_ERR_NOMEM, "out of memory sorting the parts");
  flush_job j;
  memset(&j, 0, sizeof j);
  j.r = r;
  j.packed = (uint8_t *)(r == buf ? tmp : buf); /* n x 48 bytes hold n x VX_SPLIT_RECORD */
  const uint64_t first = sp->nruns, at = sp->bytes;
  vx_status s = VX_OK;
  for (uint64_t a = 0; s == VX_OK && a < n;) {
    uint64_t b = a;
    while (b < n && r[b].code == r[a].code) b++;
    s = add_run(sp, r[a].code, a, b - a, err);
    a = b;
  }
  if (s != VX_OK) return s;
  vx_ranges_run(sp->o.threads, n, pack_range, &j);
  j.runs = sp->runs + first;
  const uint64_t nruns = sp->nruns - first;
  if (sp->named) {
    atomic_init(&j.failed, 0);
    vx_items_run(sp->o.threads, nruns, check_run, &j);
    if (atomic_load(&j.failed))
      return vx_error_set(err, VX_ERR_NOMEM, "out of memory checking the parts");
  }
  for (uint64_t k = 0; k < nruns; k++) j.runs[k].at = at + j.runs[k].at * VX_SPLIT_RECORD;
  return put(sp, j.packed, n * VX_SPLIT_RECORD, err);
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
  split_rec *buf, *tmp; /* the records; the sort's and the packing's room */
  uint64_t cap, n, records; /* the buffer's room, what it holds, what was written */
  uint64_t *count, *at;
} split_pass;

static vx_status flush_pass(split_pass *q, vx_error *err) {
  q->records += q->n;
  vx_status s = q->n ? flush(q->sp, q->buf, q->tmp, q->n, err) : VX_OK;
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
  q.tmp = (split_rec *)vx_malloc((size_t)q.cap * sizeof *q.tmp);
  q.count = (uint64_t *)vx_malloc((size_t)nr * sizeof *q.count);
  q.at = (uint64_t *)vx_malloc((size_t)nr * sizeof *q.at);
  vx_status s = q.buf && q.tmp && q.count && q.at
                    ? read_pieces(sp, "splitting", NULL, split_piece, &q, err)
                    : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s == VX_OK) s = flush_pass(&q, err);
  vx_free(q.buf);
  vx_free(q.tmp);
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
  sp->pl->work = (double *)vx_calloc((size_t)(ntiles ? ntiles : 1), sizeof(double));
  if (!sp->first || !sp->pl->work) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  for (uint64_t i = 0, k = 0; i <= sp->nruns; i++) {
    if (i == sp->nruns || i == 0 || sp->runs[i].code != sp->runs[i - 1].code) sp->first[k++] = i;
    if (i < sp->nruns) sp->pl->work[k - 1] += (double)sp->runs[i].n;
  }
  for (uint64_t k = 0; k < ntiles; k++)
    if (sp->pl->work[k] > (double)sp->max_part) sp->max_part = (uint64_t)sp->pl->work[k];
  sp->pl->ntiles = ntiles;
  return VX_OK;
}

/* Tile k's part: its triangles in the mesh's order (a soup, bounds set), each checked
 * (vx_split_run_decode), and their indices in the mesh when idx is not NULL (vx_free'd by the
 * caller). */
static vx_status read_part(const vx_split *sp, uint64_t k, vx_soup *part, uint32_t **idx,
                           vx_error *err) {
  memset(part, 0, sizeof *part);
  uint64_t n = 0, most = 0;
  for (uint64_t i = sp->first[k]; i < sp->first[k + 1]; i++) {
    n += sp->runs[i].n;
    if (sp->runs[i].n > most) most = sp->runs[i].n;
  }
  uint8_t *raw = (uint8_t *)vx_malloc((size_t)most * VX_SPLIT_RECORD);
  float *pos = (float *)vx_malloc((size_t)n * 9 * sizeof(float));
  uint32_t *ix = (uint32_t *)vx_malloc((size_t)n * 4);
  vx_status s = raw && pos && ix
                    ? VX_OK
                    : vx_error_set(err, VX_ERR_NOMEM, "out of memory for a part of %llu triangles",
                                   (unsigned long long)n);
  int64_t last = -1;
  for (uint64_t i = sp->first[k], m = 0; s == VX_OK && i < sp->first[k + 1]; i++) {
    const vx_split_run *r = &sp->runs[i];
    s = get(sp, r->at, raw, r->n * VX_SPLIT_RECORD, err);
    if (s == VX_OK)
      s = vx_split_run_decode(raw, r, &sp->head, sp->name, sp->named, &last, ix + m,
                              pos + 9 * m, err);
    m += r->n;
  }
  vx_free(raw);
  if (s != VX_OK || !idx) vx_free(ix);
  if (s != VX_OK) {
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

/* The exact copies the parts' marks found (once every part was read). */
static void count_dropped(void *ctx) {
  vx_split *sp = (vx_split *)ctx;
  sp->dropped = 0;
  for (uint64_t i = 0; i <= sp->tally.tri_count / 8; i++)
    sp->dropped += (uint64_t)__builtin_popcount(atomic_load(&sp->dup[i]));
  sp->pl->dropped = sp->dropped;
}

/* The part's exact copies: marked in the mesh's bits when it keeps them (a copy reaches the tiles its original
 * reaches, so each part's marks are the whole mesh's for its triangles) and dropped. */
static vx_status drop_copies(vx_split *sp, vx_soup *part, const uint32_t *idx, int threads,
                             vx_error *err) {
  uint8_t *drop = (uint8_t *)vx_malloc((size_t)part->tri_count + 1);
  uint64_t nd = 0;
  vx_status s = drop ? vx_soup_dedup_marks(part, threads, drop, &nd, err)
                     : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  uint64_t w = 0;
  for (uint64_t t = 0; s == VX_OK && nd && t < part->tri_count; t++) {
    if (drop[t]) {
      if (sp->dup) atomic_fetch_or(&sp->dup[idx[t] >> 3], (unsigned char)(1u << (idx[t] & 7)));
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
                            const char *out_path, vx_tile_out *r, vx_error *err) {
  vx_split *sp = (vx_split *)ctx;
  const uint64_t code = sp->runs[sp->first[k]].code;
  memset(r, 0, sizeof *r);
  vx_soup part;
  uint32_t *idx = NULL;
  vx_status s = read_part(sp, k, &part, &idx, err);
  if (s == VX_OK) s = drop_copies(sp, &part, idx, sp->o.threads, err);
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
    s = tris ? vx_tile_plan_run(&q, &qbo, lo, tris, pre, out_path, r, err)
             : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    vx_free(tris);
    if (q.fell_back) { /* the same bytes on the CPU; noted once */
      bo->gpu = 0;
      pthread_mutex_lock(&sp->pl->mu);
      if (!sp->pl->fell_back) sp->pl->note = q.note;
      sp->pl->fell_back = 1;
      pthread_mutex_unlock(&sp->pl->mu);
    }
  }
  vx_tile_plan_release(&q);
  vx_soup_free(&part);
  return s;
}

int vx_split_applies(const vx_convert_opts *o) {
  return o->tile_depth > 0 && o->sign_rule == VX_SIGN_PSEUDO_NORMAL;
}

static vx_split *split_new(const char *mesh_path, const vx_convert_opts *o, const char *tmp_dir) {
  vx_split *sp = (vx_split *)vx_calloc(1, sizeof *sp);
  if (!sp) return NULL;
  sp->path = mesh_path;
  sp->o = *o;
  sp->fd = -1;
  sp->pl = &sp->own;
  sp->name = "the split's temporary file";
  sp->tmp_dir = vx_strdup(tmp_dir);
  if (!sp->tmp_dir) {
    vx_free(sp);
    return NULL;
  }
  return sp;
}

static void split_free(void *ctx) {
  vx_split *sp = (vx_split *)ctx;
  if (!sp) return;
  if (sp->fd >= 0) close(sp->fd);
  if (sp->pl == &sp->own) vx_tile_plan_release(&sp->own);
  vx_free(sp->runs);
  vx_free(sp->first);
  vx_free(sp->dup);
  vx_free(sp->tmp_dir);
  vx_free(sp);
}

/* Passes 1 and 2 into sp->fd from sp->bytes on; the header of the pool's plan. *read_once: the
 * first pass went through (from there VX_ERR_FORMAT is not "assimp's file"). */
static vx_status split_mesh(vx_split *sp, int *read_once, vx_error *err) {
  const double t0 = vx_clock_seconds();
  vx_status s = pass_bounds(sp, err);
  const double t1 = vx_clock_seconds();
  sp->sec[0] = t1 - t0;
  *read_once = s == VX_OK;
  sp->head.triangles = sp->tally.tri_count;
  if (s == VX_OK) s = vx_tile_plan_shell(sp->pl, &sp->o, sp->tmp_dir, err);
  if (s == VX_OK) s = pass_split(sp, err);
  sp->sec[1] = vx_clock_seconds() - t1;
  if (s == VX_OK) {
    sp->dup = (atomic_uchar *)vx_calloc((size_t)(sp->tally.tri_count / 8 + 1), 1);
    if (!sp->dup) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  if (s != VX_OK) return s;
  sp->fx.xf = sp->xf;
  sp->fx.unique = 1; /* each part's copies are dropped as it is read */
  vx_tiled_header *h = &sp->pl->h;
  h->depth = sp->D;
  h->tile_depth = sp->T;
  h->band = sp->band;
  h->prune_error = sp->pl->bo.max_error;
  h->xf = sp->xf;
  h->build_id = sp->build_id;
  return VX_OK;
}

vx_status vx_convert_split(const char *mesh_path, const vx_convert_opts *o, const char *out_path,
                           const char *tmp_dir, vx_mesh_info *info, vx_conversion *b,
                           vx_error *err) {
  const double t0 = vx_clock_seconds();
  vx_split *sp = split_new(mesh_path, o, tmp_dir);
  if (!sp) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  char name[4200];
  snprintf(name, sizeof name, "%s/.voxlod-parts-XXXXXX", tmp_dir);
  sp->fd = mkstemp(name);
  vx_status s = VX_OK;
  if (sp->fd < 0)
    s = vx_error_set(err, VX_ERR_IO, "cannot create a temporary file in '%s': %s", tmp_dir,
                     strerror(errno));
  else
    unlink(name); /* nameless: closing it (or dying) frees its blocks */
  int read_once = 0;
  if (s == VX_OK) s = split_mesh(sp, &read_once, err);
  if (info && read_once) {
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
  if (s == VX_OK) {
    char bytes[32];
    vx_notes_add(&b->notes, "split by tile without holding the mesh: read %.2fs, split %.2fs "
                 "(%llu records in %llu parts, %s in a temporary file; the largest part %llu "
                 "triangles)", sp->sec[0], sp->sec[1], (unsigned long long)sp->records,
                 (unsigned long long)sp->pl->ntiles,
                 vx_bytes_text((double)sp->bytes, bytes, sizeof bytes),
                 (unsigned long long)sp->max_part);
    vx_tile_source src = {build_part, count_dropped, sp};
    s = vx_tile_pool_run(sp->pl, &src, o, out_path, NULL, sp->tally.tri_count, t0, b, err);
  }
  if (s == VX_OK) b->stats.triangles -= sp->dropped;
  if (s == VX_ERR_FORMAT && read_once)
    s = vx_error_set(err, VX_ERR_IO, "'%s' changed while it was read", mesh_path);
  split_free(sp);
  return s;
}

/* ---- the parts as a file for tasks ------------------------------------------------------------ */

/* Every part's copies marked (the bits count_dropped reads), before any tile is built: rounds of
 * parts side by side, as many as the threads and half the memory limit allow (each part's
 * triangles, indices and the duplicate search's tables, about MARK_BYTES a triangle), each part's
 * search on its share of the threads; progress and cancelling between rounds. */
#define MARK_BYTES 96u

typedef struct mark_job {
  vx_split *sp;
  uint64_t k0;  /* the round's first part */
  int threads;  /* each part's */
  vx_status *st;
  vx_error *e;
} mark_job;

static void mark_part(void *ctx, uint64_t i) {
  mark_job *j = (mark_job *)ctx;
  vx_soup part;
  uint32_t *idx = NULL;
  j->st[i] = read_part(j->sp, j->k0 + i, &part, &idx, &j->e[i]);
  if (j->st[i] == VX_OK) {
    j->st[i] = drop_copies(j->sp, &part, idx, j->threads, &j->e[i]);
    vx_soup_free(&part);
  }
  vx_free(idx);
}

static vx_status mark_copies(vx_split *sp, vx_error *err) {
  const uint64_t n = sp->pl->ntiles, per = (sp->max_part + 1) * MARK_BYTES;
  const int threads = vx_thread_count(sp->o.threads, 256);
  uint64_t side = sp->o.mem_limit / 2 / per;
  if (side > (uint64_t)threads) side = (uint64_t)threads;
  if (side > n) side = n;
  if (side < 1) side = 1;
  mark_job j;
  memset(&j, 0, sizeof j);
  j.sp = sp;
  j.threads = threads / (int)side > 1 ? threads / (int)side : 1;
  j.st = (vx_status *)vx_calloc((size_t)side, sizeof *j.st);
  j.e = (vx_error *)vx_calloc((size_t)side, sizeof *j.e);
  vx_status s = j.st && j.e ? VX_OK : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  for (uint64_t k0 = 0; s == VX_OK && k0 < n; k0 += side) {
    const uint64_t k1 = n - k0 < side ? n : k0 + side;
    j.k0 = k0;
    vx_items_run((int)side, k1 - k0, mark_part, &j);
    for (uint64_t i = 0; s == VX_OK && i < k1 - k0; i++)
      if ((s = j.st[i]) != VX_OK && err) *err = j.e[i];
    if (s == VX_OK) s = cancelled(sp, "marking copies", (double)k1 / (double)n, err);
  }
  vx_free(j.st);
  vx_free(j.e);
  return s;
}

/* The index and header after the records, then the file committed. */
static vx_status write_index(vx_split *sp, vx_atomic_file *af, vx_error *err) {
  vx_split_head *hd = &sp->head;
  hd->h = sp->pl->h;
  hd->sign_rule = (uint32_t)sp->o.sign_rule;
  hd->copies = sp->dropped;
  hd->records = sp->records;
  hd->runs = sp->nruns;
  hd->tiles = sp->pl->ntiles;
  hd->max_part = sp->max_part;
  hd->index_at = sp->bytes;
  uint8_t *ix = (uint8_t *)vx_malloc((size_t)sp->nruns * VX_SPLIT_RUN);
  if (!ix) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_split_runs_encode(sp->runs, sp->nruns, ix);
  vx_status s = vx_svo_encoded_check(ix, (size_t)sp->nruns * VX_SPLIT_RUN, &hd->index_check, err);
  if (s == VX_OK) s = put(sp, ix, sp->nruns * VX_SPLIT_RUN, err);
  vx_free(ix);
  uint8_t head[VX_SPLIT_HEADER];
  vx_split_head_encode(hd, head);
  if (s == VX_OK) {
    sp->bytes = 0;
    s = put(sp, head, sizeof head, err);
  }
  sp->fd = -1; /* the atomic file's, closed by it */
  if (s == VX_OK) return vx_atomic_commit(af, err);
  vx_atomic_abort(af);
  return s;
}

vx_status vx_tile_split(const char *mesh_path, const vx_convert_opts *opts, const char *parts_path,
                        vx_tile_plan_info *info, vx_error *err) {
  const double t0 = vx_clock_seconds();
  if (!mesh_path || !*mesh_path || !parts_path || !*parts_path)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "no mesh or parts path");
  vx_convert_opts o;
  vx_status s = vx_convert_opts_ready(opts, &o, err);
  if (s != VX_OK) return s;
  if (!vx_split_applies(&o))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "only a tiled build with the pseudo-normal sign "
                        "rule is split by tile: the winding number's sign needs the whole mesh "
                        "at every corner");
  s = vx_output_check(parts_path, &mesh_path, 1, NULL, err);
  if (s != VX_OK) return s;
  char *tmp = vx_convert_spill_dir(&o, NULL);
  vx_split *sp = tmp ? split_new(mesh_path, &o, tmp) : NULL;
  vx_free(tmp);
  if (!sp) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_atomic_file af;
  s = vx_atomic_open(&af, parts_path, err);
  if (s == VX_OK && af.direct) {
    vx_atomic_abort(&af);
    s = vx_error_set(err, VX_ERR_INVALID_ARG, "'%s': the parts are written to a regular file",
                     parts_path);
  }
  if (s != VX_OK) {
    split_free(sp);
    return s;
  }
  sp->fd = af.fd;
  sp->named = 1;
  sp->name = parts_path;
  sp->bytes = VX_SPLIT_HEADER;
  int read_once = 0;
  s = split_mesh(sp, &read_once, err);
  if (s == VX_OK) s = mark_copies(sp, err);
  if (s == VX_OK) count_dropped(sp);
  const uint64_t id = sp->build_id;
  if (s == VX_OK) {
    s = write_index(sp, &af, err);
  } else {
    sp->fd = -1;
    vx_atomic_abort(&af);
  }
  if (s == VX_ERR_FORMAT && read_once)
    s = vx_error_set(err, VX_ERR_IO, "'%s' changed while it was read", mesh_path);
  if (s == VX_OK && info) {
    vx_tile_plan_info i;
    memset(&i, 0, sizeof i);
    i.struct_size = sizeof i;
    i.depth = sp->D;
    i.tile_depth = sp->T;
    i.tiles = sp->pl->ntiles;
    i.build_id = id;
    i.triangles = sp->tally.tri_count - sp->dropped;
    i.sec_plan = vx_clock_seconds() - t0;
    VX_STATS_OUT(info, i);
  }
  split_free(sp);
  return s;
}

/* The options' grid and build fields against those the parts were split with. */
static vx_status parts_match(const vx_split_head *hd, const vx_convert_opts *o, const char *name,
                             vx_error *err) {
  uint32_t D = 0;
  while ((1u << D) < o->resolution) D++;
  const float prune = o->max_error > 0.0f ? o->max_error : 0.0f;
  if (hd->h.depth != D || hd->h.tile_depth != o->tile_depth || hd->h.band != o->band ||
      hd->sign_rule != (uint32_t)o->sign_rule || hd->h.prune_error != prune)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "'%s' was split for another build (%u^3 in "
                        "tiles of %u^3, band %g, error %g, sign rule %u; asked: %u^3 in tiles of "
                        "%u^3, band %g, error %g, sign rule %d)", name, 1u << hd->h.depth,
                        1u << hd->h.tile_depth, (double)hd->h.band, (double)hd->h.prune_error,
                        hd->sign_rule, 1u << D, 1u << o->tile_depth, (double)o->band,
                        (double)prune, (int)o->sign_rule);
  return VX_OK;
}

/* The parts file's header and index into sp (its fd open on it). */
static vx_status read_index(vx_split *sp, vx_error *err) {
  struct stat st;
  if (fstat(sp->fd, &st) != 0 || !S_ISREG(st.st_mode))
    return vx_error_set(err, VX_ERR_IO, "'%s' is not a regular file", sp->name);
  uint8_t head[VX_SPLIT_HEADER];
  const uint64_t size = (uint64_t)st.st_size;
  vx_status s = size < VX_SPLIT_HEADER
                    ? vx_error_set(err, VX_ERR_CORRUPT, "'%s': %llu bytes, too short for a parts "
                                   "file", sp->name, (unsigned long long)size)
                    : get(sp, 0, head, sizeof head, err);
  if (s == VX_OK) s = vx_split_head_decode(head, size, sp->name, &sp->head, err);
  if (s == VX_OK) s = parts_match(&sp->head, &sp->o, sp->name, err);
  if (s != VX_OK) return s;
  const vx_split_head *hd = &sp->head;
  uint8_t *ix = (uint8_t *)vx_malloc((size_t)hd->runs * VX_SPLIT_RUN);
  sp->runs = (vx_split_run *)vx_malloc((size_t)hd->runs * sizeof *sp->runs);
  sp->first = (uint64_t *)vx_malloc((size_t)(hd->tiles + 1) * sizeof *sp->first);
  s = ix && sp->runs && sp->first ? get(sp, hd->index_at, ix, hd->runs * VX_SPLIT_RUN, err)
                                  : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s == VX_OK) s = vx_split_runs_decode(ix, hd, sp->name, sp->runs, err);
  vx_free(ix);
  if (s != VX_OK) return s;
  sp->nruns = hd->runs;
  for (uint64_t i = 0, k = 0; i <= sp->nruns; i++)
    if (i == sp->nruns || i == 0 || sp->runs[i].code != sp->runs[i - 1].code) sp->first[k++] = i;
  sp->D = hd->h.depth;
  sp->T = hd->h.tile_depth;
  sp->band = hd->h.band;
  sp->xf = hd->h.xf;
  sp->fx.xf = hd->h.xf;
  sp->fx.build_id = hd->h.build_id;
  sp->fx.unique = 1;
  sp->tally.tri_count = hd->triangles;
  sp->max_part = hd->max_part;
  return VX_OK;
}

vx_status vx_tile_plan_open_parts(const char *parts_path, const vx_convert_opts *opts,
                                  vx_tile_plan **out, vx_error *err) {
  const double t0 = vx_clock_seconds();
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the plan");
  *out = NULL;
  if (!parts_path || !*parts_path) return vx_error_set(err, VX_ERR_INVALID_ARG, "no parts path");
  vx_convert_opts o;
  vx_status s = vx_convert_opts_ready(opts, &o, err);
  if (s != VX_OK) return s;
  if (!vx_split_applies(&o))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a plan on parts needs a tiled build with the "
                        "pseudo-normal sign rule");
  char *tmp = vx_convert_spill_dir(&o, NULL);
  vx_split *sp = tmp ? split_new(parts_path, &o, tmp) : NULL;
  vx_tile_plan *p = (vx_tile_plan *)vx_calloc(1, sizeof *p);
  s = sp && p ? VX_OK : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s == VX_OK) {
    sp->name = parts_path;
    sp->named = 1;
    sp->fd = open(parts_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (sp->fd < 0)
      s = vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", parts_path, strerror(errno));
  }
  if (s == VX_OK) s = read_index(sp, err);
  if (s == VX_OK) s = vx_tile_plan_shell(p, &o, tmp, err);
  vx_free(tmp);
  if (s != VX_OK) {
    if (p) vx_tile_plan_release(p);
    vx_free(p);
    split_free(sp);
    return s;
  }
  sp->pl = p;
  p->ntiles = sp->head.tiles;
  p->h = sp->head.h;
  p->kept = sp->head.triangles - sp->head.copies;
  p->dropped = sp->head.copies;
  p->source.run = build_part;
  p->source.ctx = sp;
  p->source_free = split_free;
  p->sec_plan = vx_clock_seconds() - t0;
  *out = p;
  return VX_OK;
}
