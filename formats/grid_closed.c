/* SPDX-License-Identifier: Apache-2.0 */
/* grid_closed.c - the cells of a level above the finest, closed (formats/grid_closed.h).
 *
 * Lookups. The points' keys and the cells' codes are sorted, and a cell's corners and neighbours
 * lie near the previous cell's in Morton order, so each is found by a galloping search from
 * where the last one of its kind was (a few probes, in cache) rather than a binary search over
 * the whole array. The pass over the cut's cells runs on all cores in fixed chunks; the cells it
 * finds missing are few, and the closure over them runs on one thread, in a fixed order: the
 * result does not depend on the thread count.
 */
#include "formats/grid_closed.h"
#include "sys/system.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct points {
  const uint64_t *keys;
  const float *val;
  uint64_t n;
  uint32_t pad;
} points;

/* The 8 quantized corners of cell (x, y, z) (hints: one per corner), or 0 when one has no
 * value. */
static int corners(const points *p, const uint32_t xyz[3], float band, uint64_t hint[8],
                   int8_t q[8]) {
  for (int k = 0; k < 8; k++) {
    const uint64_t key = vx_morton_encode(xyz[0] + p->pad + (k & 1), xyz[1] + p->pad + (k >> 1 & 1),
                                          xyz[2] + p->pad + (k >> 2 & 1));
    const uint64_t at = vx_gallop(p->keys, p->n, key, &hint[k]);
    if (at == p->n || p->keys[at] != key) return 0;
    q[k] = vx_corner_quantize(p->val[at], band);
  }
  return 1;
}

/* The cells around cell xyz's grid edges whose ends differ in sign (or hold a zero) that are not
 * among codes[0..n): fn(code) for each (repeats possible). hint: codes' search hint. */
static int missing_around(const uint32_t xyz[3], const int8_t q[8], uint32_t res,
                          const uint64_t *codes, uint64_t n, uint64_t *hint,
                          int (*fn)(void *, uint64_t), void *user) {
  for (int a = 0; a < 3; a++)   /* edges along axis a */
    for (int e = 0; e < 4; e++) {
      const int b1 = (a + 1) % 3, b2 = (a + 2) % 3;
      const int j = e & 1, k = e >> 1; /* the edge's place on axes b1, b2 */
      const int c0 = j << b1 | k << b2, c1 = c0 | 1 << a;
      if ((q[c0] < 0) == (q[c1] < 0) && (q[c0] != 0) == (q[c1] != 0)) continue;
      for (int m = 0; m < 4; m++) { /* the cells around the edge */
        int64_t p[3] = {xyz[0], xyz[1], xyz[2]};
        p[b1] += j - 1 + (m & 1);
        p[b2] += k - 1 + (m >> 1);
        if (p[b1] < 0 || p[b2] < 0 || p[b1] >= (int64_t)res || p[b2] >= (int64_t)res) continue;
        if (p[b1] == xyz[b1] && p[b2] == xyz[b2]) continue;
        const uint64_t nb = vx_morton_encode((uint32_t)p[0], (uint32_t)p[1], (uint32_t)p[2]);
        const uint64_t at = vx_gallop(codes, n, nb, hint);
        if (at < n && codes[at] == nb) continue;
        if (!fn(user, nb)) return 0;
      }
    }
  return 1;
}

/* A growable list of codes. */
typedef struct list {
  uint64_t *v;
  uint64_t n, cap;
} list;

static int list_push(void *user, uint64_t code) {
  list *l = (list *)user;
  if (l->n == l->cap) {
    uint64_t cap = l->cap ? 2 * l->cap : 256;
    uint64_t *v = (uint64_t *)vx_realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) return 0;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = code;
  return 1;
}

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorted, without repeats, without what is in sorted b[0..nb). */
static void list_settle(list *l, const uint64_t *b, uint64_t nb) {
  qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_u64);
  uint64_t m = 0, hint = 0;
  for (uint64_t i = 0; i < l->n; i++) {
    if (m && l->v[m - 1] == l->v[i]) continue;
    const uint64_t at = vx_gallop(b, nb, l->v[i], &hint);
    if (at < nb && b[at] == l->v[i]) continue;
    l->v[m++] = l->v[i];
  }
  l->n = m;
}

#define CHUNK 65536u

/* The pass over the cut's cells, chunk by chunk: their corners, and the cells missing around
 * their crossings (a list per chunk). */
typedef struct pass {
  const vx_cut *c;
  const points *P;
  float band;
  vx_voxel *vox;  /* the cut's cells' corners */
  list *missing;  /* per chunk */
  uint64_t chunks, next;
  int failed;
} pass;

static void *pass_run(void *arg) {
  pass *w = (pass *)arg;
  for (;;) {
    const uint64_t ch = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
    if (ch >= w->chunks || __atomic_load_n(&w->failed, __ATOMIC_RELAXED)) break;
    const uint64_t i0 = ch * CHUNK, i1 = i0 + CHUNK < w->c->count ? i0 + CHUNK : w->c->count;
    uint64_t hint[8] = {0}, chint = i0;
    for (uint64_t i = i0; i < i1; i++) {
      uint32_t xyz[3];
      vx_morton_decode(w->c->codes[i], &xyz[0], &xyz[1], &xyz[2]);
      int8_t q[8];
      if (!corners(w->P, xyz, w->band, hint, q)) { /* the cut's corners are all points */
        __atomic_store_n(&w->failed, 2, __ATOMIC_RELAXED);
        return NULL;
      }
      memcpy(w->vox[i].c, q, 8);
      if (!missing_around(xyz, q, w->c->res, w->c->codes, w->c->count, &chint, list_push,
                          &w->missing[ch])) {
        __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
        return NULL;
      }
    }
  }
  return NULL;
}

/* The closure over the added cells: each one's own crossings may need more. Every cell added,
 * in the order found, and a hash set of them (open addressing, code + 1; 0: empty). */
typedef struct closure {
  list added;
  uint64_t *set, cap;
} closure;

static uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return x ^ x >> 29;
}

static int closure_push(void *user, uint64_t code) {
  closure *cl = (closure *)user;
  if (2 * (cl->added.n + 1) > cl->cap) {
    const uint64_t cap = cl->cap ? 2 * cl->cap : 1024;
    uint64_t *k = (uint64_t *)vx_calloc((size_t)cap, sizeof *k);
    if (!k) return 0;
    for (uint64_t i = 0; i < cl->cap; i++) {
      if (!cl->set[i]) continue;
      uint64_t j = mix(cl->set[i]) & (cap - 1);
      while (k[j]) j = (j + 1) & (cap - 1);
      k[j] = cl->set[i];
    }
    vx_free(cl->set);
    cl->set = k;
    cl->cap = cap;
  }
  uint64_t j = mix(code + 1) & (cl->cap - 1);
  while (cl->set[j]) {
    if (cl->set[j] == code + 1) return 1;
    j = (j + 1) & (cl->cap - 1);
  }
  cl->set[j] = code + 1;
  return list_push(&cl->added, code);
}

vx_status vx_cut_closed(const vx_cut *c, float band, uint64_t limit, uint64_t **codes_out,
                        vx_voxel **vox_out, uint64_t *n_out, vx_error *err) {
  *codes_out = NULL;
  *vox_out = NULL;
  *n_out = 0;
  uint64_t *keys = NULL, np = 0;
  float *val = NULL;
  uint32_t pad = 0;
  vx_status s = vx_cut_points(c, band, limit, &keys, &val, &np, &pad, err);
  if (s != VX_OK) return s;
  /* the grid's box holds the surface: its outer faces are outside */
  for (uint64_t i = 0; i < np; i++) {
    uint32_t p[3];
    vx_morton_decode(keys[i], &p[0], &p[1], &p[2]);
    for (int a = 0; a < 3; a++)
      if ((p[a] <= pad || p[a] >= pad + c->res) && !(val[i] > 0.0f))
        val[i] = fabsf(val[i]) > 0.5f * band / 127.0f ? fabsf(val[i]) : band / 127.0f;
  }
  const points P = {keys, val, np, pad};
  pass w;
  memset(&w, 0, sizeof w);
  w.c = c;
  w.P = &P;
  w.band = band;
  w.chunks = (c->count + CHUNK - 1) / CHUNK;
  w.vox = (vx_voxel *)vx_malloc((size_t)(c->count ? c->count : 1) * sizeof *w.vox);
  w.missing = (list *)vx_calloc((size_t)(w.chunks ? w.chunks : 1), sizeof *w.missing);
  if (!w.vox || !w.missing) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the cells");
  if (s == VX_OK) vx_parallel(vx_thread_count(0, 256), pass_run, &w);
  if (s == VX_OK && w.failed)
    s = w.failed == 2 ? vx_error_set(err, VX_ERR_CORRUPT, "a cell of the level lacks a corner")
                      : vx_error_set(err, VX_ERR_NOMEM, "out of memory for the cells");
  /* the missing cells, in chunk order, then each one's own (one thread) */
  closure cl;
  memset(&cl, 0, sizeof cl);
  list found;
  memset(&found, 0, sizeof found);
  for (uint64_t ch = 0; s == VX_OK && ch < w.chunks; ch++)
    for (uint64_t i = 0; i < w.missing[ch].n && s == VX_OK; i++)
      if (!list_push(&found, w.missing[ch].v[i]))
        s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the cells");
  for (uint64_t ch = 0; w.missing && ch < w.chunks; ch++) vx_free(w.missing[ch].v);
  vx_free(w.missing);
  if (s == VX_OK) {
    list_settle(&found, c->codes, c->count);
    for (uint64_t i = 0; i < found.n && s == VX_OK; i++)
      if (!closure_push(&cl, found.v[i]))
        s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the cells");
  }
  vx_free(found.v);
  for (uint64_t i = 0; i < cl.added.n && s == VX_OK; i++) {
    uint32_t xyz[3];
    vx_morton_decode(cl.added.v[i], &xyz[0], &xyz[1], &xyz[2]);
    uint64_t hint[8] = {0}, chint = 0;
    int8_t q[8];
    if (!corners(&P, xyz, band, hint, q)) continue;
    if (!missing_around(xyz, q, c->res, c->codes, c->count, &chint, closure_push, &cl))
      s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the cells");
  }
  /* the added cells that have every corner, merged with the cut's in Morton order */
  list keep;
  memset(&keep, 0, sizeof keep);
  for (uint64_t i = 0; i < cl.added.n && s == VX_OK; i++) {
    uint32_t xyz[3];
    vx_morton_decode(cl.added.v[i], &xyz[0], &xyz[1], &xyz[2]);
    uint64_t hint[8] = {0};
    int8_t q[8];
    if (corners(&P, xyz, band, hint, q) && !list_push(&keep, cl.added.v[i]))
      s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the cells");
  }
  vx_free(cl.added.v);
  vx_free(cl.set);
  if (s == VX_OK) qsort(keep.v, (size_t)keep.n, sizeof *keep.v, cmp_u64);
  const uint64_t n = c->count + keep.n;
  uint64_t *codes = NULL;
  vx_voxel *vox = NULL;
  if (s == VX_OK && (double)vx_resident_bytes() + 16.0 * (double)n > (double)limit)
    s = vx_error_set(err, VX_ERR_LIMIT, "the level's %llu cells do not fit the memory limit",
                     (unsigned long long)n);
  if (s == VX_OK) {
    codes = (uint64_t *)vx_malloc((size_t)n * sizeof *codes);
    vox = (vx_voxel *)vx_malloc((size_t)n * sizeof *vox);
    if (!codes || !vox) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the cells");
  }
  for (uint64_t i = 0, k = 0, o = 0; s == VX_OK && o < n; o++) {
    if (k == keep.n || (i < c->count && c->codes[i] < keep.v[k])) {
      codes[o] = c->codes[i];
      vox[o] = w.vox[i++];
    } else {
      uint32_t xyz[3];
      vx_morton_decode(keep.v[k], &xyz[0], &xyz[1], &xyz[2]);
      uint64_t hint[8] = {0};
      codes[o] = keep.v[k++];
      corners(&P, xyz, band, hint, (int8_t *)vox[o].c);
    }
  }
  vx_free(keep.v);
  vx_free(w.vox);
  vx_free(keys);
  vx_free(val);
  if (s != VX_OK) {
    vx_free(codes);
    vx_free(vox);
    return s;
  }
  *codes_out = codes;
  *vox_out = vox;
  *n_out = n;
  return VX_OK;
}
