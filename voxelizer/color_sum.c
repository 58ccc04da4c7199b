/* SPDX-License-Identifier: Apache-2.0 */
/* color_sum.c - the colour pass's records -> sums per cell -> the tree's colours (color.c tells
 * the whole pass). Every step runs on all threads, and none depends on how many run: work is cut
 * into a fixed number of ranges, each reduced in order by one thread.
 *
 * Sort: a stable radix sort on the code (vx_radix_sort), so records made in triangle order end in
 * (code, triangle) order.
 * Reduce: the sorted input is cut into ranges at changes of the key (code, or code >> 3 a level
 * up), each range's keys counted, the output allocated to the exact count, then each range
 * summed into place.
 * Walk: level by level, the nodes of a level in ranges of WALK_CHUNK; a range finds its first
 * child's sums by binary search, then merges (the children's codes increase along a level).
 */
#include "voxelizer/color_internal.h"
#include "svo/color.h"
#include "sys/sort.h"
#include "sys/system.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#define REDUCE_PARTS 64
#define WALK_CHUNK 4096

int color_sort(crec *r, crec *tmp, uint64_t n, uint32_t bits, int threads) {
  if (n < 2) return 1; /* r may be NULL */
  crec *s = (crec *)vx_radix_sort(r, tmp, (size_t)n, sizeof *r, offsetof(crec, code), bits, threads);
  if (s && s != r) memcpy(r, s, (size_t)n * sizeof *r);
  return s != NULL;
}

/* ---- reduce ------------------------------------------------------------------------------ */

typedef struct red_job {
  const crec *r; /* records (voxels' sums), or */
  const csum *c; /* a level's sums (the level above) */
  uint64_t n;
  vx_color_filter f;
  csum *out;
  uint64_t lo[REDUCE_PARTS + 1];
  uint64_t at[REDUCE_PARTS]; /* keys in each range, then its first output */
  int write;
} red_job;

static uint64_t red_key(const red_job *j, uint64_t i) {
  return j->r ? j->r[i].code : j->c[i].code >> 3;
}

static void red_range(void *ctx, uint64_t p) {
  red_job *j = (red_job *)ctx;
  const uint64_t a = j->lo[p], b = j->lo[p + 1];
  if (!j->write) {
    uint64_t keys = 0;
    for (uint64_t i = a; i < b; i++) keys += i == a || red_key(j, i) != red_key(j, i - 1);
    j->at[p] = keys;
    return;
  }
  const int dom = j->f == VX_COLOR_FILTER_DOMINANT;
  csum *o = j->out + j->at[p];
  for (uint64_t i = a; i < b;) {
    csum s;
    memset(&s, 0, sizeof s);
    s.code = red_key(j, i);
    double best = 0.0;
    for (; i < b && red_key(j, i) == s.code; i++) {
      if (j->r) {
        const crec *x = &j->r[i];
        s.area += x->area;
        s.a += x->a;
        if (!dom) {
          for (int k = 0; k < 3; k++) s.rgb[k] += x->rgb[k];
        } else if (x->a > best) { /* the part with the largest opaque area, the first on ties */
          best = x->a;
          for (int k = 0; k < 3; k++) s.rgb[k] = (double)x->rgb[k] / (double)x->a;
        }
      } else {
        const csum *x = &j->c[i];
        s.area += x->area;
        s.a += x->a;
        if (!dom) {
          for (int k = 0; k < 3; k++) s.rgb[k] += x->rgb[k];
        } else if (x->a > best) { /* the child with the largest opaque area */
          best = x->a;
          memcpy(s.rgb, x->rgb, sizeof s.rgb);
        }
      }
    }
    *o++ = s;
  }
}

/* The ranges cut at key changes and their keys counted: the output's size, *count. */
static void reduce_count(red_job *j, int threads, uint64_t *count) {
  for (uint64_t p = 0; p <= REDUCE_PARTS; p++) {
    uint64_t a = (uint64_t)((unsigned __int128)j->n * p / REDUCE_PARTS);
    if (p && a < j->lo[p - 1]) a = j->lo[p - 1];
    while (a > 0 && a < j->n && red_key(j, a) == red_key(j, a - 1)) a++; /* a key's start */
    j->lo[p] = a;
  }
  j->lo[REDUCE_PARTS] = j->n;
  j->write = 0;
  vx_items_run(threads, REDUCE_PARTS, red_range, j);
  *count = vx_exclusive_sum(j->at, REDUCE_PARTS);
}

static csum *reduce(red_job *j, int threads, uint64_t max_bytes, uint64_t *count, int *over) {
  reduce_count(j, threads, count);
  const uint64_t total = *count;
  *over = max_bytes && (double)total * sizeof(csum) > (double)max_bytes;
  if (*over) return NULL;
  j->out = (csum *)vx_malloc((size_t)(total ? total : 1) * sizeof(csum));
  if (!j->out) return NULL;
  j->write = 1;
  vx_items_run(threads, REDUCE_PARTS, red_range, j);
  return j->out;
}

csum *color_reduce_voxels(const crec *r, uint64_t n, vx_color_filter f, int threads,
                          uint64_t max_bytes, uint64_t *count, int *over) {
  red_job j;
  memset(&j, 0, sizeof j);
  j.r = r;
  j.n = n;
  j.f = f;
  return reduce(&j, threads, max_bytes, count, over);
}

int color_reduce_voxels_into(const crec *r, uint64_t n, vx_color_filter f, int threads, csum *out,
                             uint64_t cap, uint64_t *count) {
  red_job j;
  memset(&j, 0, sizeof j);
  j.r = r;
  j.n = n;
  j.f = f;
  reduce_count(&j, threads, count);
  if (*count > cap) return 0;
  j.out = out;
  j.write = 1;
  vx_items_run(threads, REDUCE_PARTS, red_range, &j);
  return 1;
}

csum *color_reduce_up(const csum *c, uint64_t n, vx_color_filter f, int threads,
                      uint64_t max_bytes, uint64_t *count, int *over) {
  red_job j;
  memset(&j, 0, sizeof j);
  j.c = c;
  j.n = n;
  j.f = f;
  return reduce(&j, threads, max_bytes, count, over);
}

/* ---- the walk ---------------------------------------------------------------------------- */

uint32_t color_cell(const csum *s, vx_color_filter f, uint32_t parent) {
  if (!s || !(s->area > 0.0)) return (parent & 0xffffffu) | 0xff000000u; /* inherited */
  if (!(s->a > 0.0)) return parent & 0xffffffu; /* every part cut out: a hole */
  double rgb[3];
  for (int k = 0; k < 3; k++) rgb[k] = f == VX_COLOR_FILTER_DOMINANT ? s->rgb[k] : s->rgb[k] / s->a;
  uint32_t c = vx_rgba_pack_linear((float)rgb[0], (float)rgb[1], (float)rgb[2], 1.0f) & 0xffffffu;
  uint32_t a8 = vx_unorm8((float)(s->a / s->area));
  return c | (a8 ? a8 : 1u) << 24; /* some of it is opaque: never a hole */
}

typedef struct walk_job {
  const vx_octree *t;
  const csum *S; /* the children's level's sums */
  uint64_t nS;
  vx_color_filter f;
  uint32_t *ncol, *vcol;
  const uint64_t *codes; /* this level's cells' codes */
  uint64_t *next;        /* the children's */
  uint32_t level;
  atomic_int bad;
} walk_job;

static void walk_range(void *ctx, uint64_t chunk) {
  walk_job *j = (walk_job *)ctx;
  const vx_octree *t = j->t;
  const uint32_t l = j->level, D = t->depth;
  const uint64_t first = t->level_first[l], cnt = t->level_count[l];
  const uint64_t cfirst = l + 1 < D ? t->level_first[l + 1] : 0, ccnt = t->level_count[l + 1];
  const uint64_t k0 = chunk * WALK_CHUNK, k1 = k0 + WALK_CHUNK < cnt ? k0 + WALK_CHUNK : cnt;
  /* the first sums at or after the range's first possible child */
  uint64_t lo = 0, hi = j->nS, want = j->codes[k0] << 3;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (j->S[mid].code < want) lo = mid + 1;
    else hi = mid;
  }
  uint64_t p = lo;
  for (uint64_t k = k0; k < k1; k++) {
    const vx_node *nd = &t->nodes[first + k];
    uint32_t mask = vx_node_mask(nd->info), slot_k = 0;
    for (uint32_t s = 0; s < 8; s++) {
      if (!(mask >> s & 1u)) continue;
      uint64_t idx = (uint64_t)nd->child + slot_k++;
      if (idx < cfirst || idx - cfirst >= ccnt) {
        atomic_store(&j->bad, 1);
        return;
      }
      uint64_t code = j->codes[k] << 3 | s;
      while (p < j->nS && j->S[p].code < code) p++;
      const csum *hit = p < j->nS && j->S[p].code == code ? &j->S[p] : NULL;
      uint32_t c = color_cell(hit, j->f, j->ncol[first + k]);
      if (l + 1 < D) {
        j->ncol[idx] = c;
        j->next[idx - cfirst] = code;
      } else {
        j->vcol[idx] = c;
      }
    }
  }
}

vx_status color_walk(const vx_octree *t, csum *const *sums, const uint64_t *nsum,
                     vx_color_filter f, uint32_t *ncol, uint32_t *vcol, uint64_t *codes,
                     uint64_t *next_codes, int threads, vx_error *err) {
  const uint32_t grey = vx_rgba_pack_linear(0.5f, 0.5f, 0.5f, 1.0f);
  codes[0] = 0;
  ncol[0] = color_cell(nsum[0] && sums[0][0].code == 0 ? &sums[0][0] : NULL, f, grey);
  walk_job j;
  memset(&j, 0, sizeof j);
  j.t = t;
  j.f = f;
  j.ncol = ncol;
  j.vcol = vcol;
  atomic_init(&j.bad, 0);
  for (uint32_t l = 0; l < t->depth; l++) {
    j.S = sums[l + 1];
    j.nS = nsum[l + 1];
    j.codes = codes;
    j.next = next_codes;
    j.level = l;
    vx_items_run(threads, (t->level_count[l] + WALK_CHUNK - 1) / WALK_CHUNK, walk_range, &j);
    if (atomic_load(&j.bad))
      return vx_error_set(err, VX_ERR_CORRUPT, "colour pass: a child index out of range");
    uint64_t *x = codes;
    codes = next_codes;
    next_codes = x;
  }
  return VX_OK;
}

vx_status color_cell_finish(const crec *r, uint64_t n, uint32_t blog, vx_color_filter f,
                            int threads, const vx_octree *sub, csum *root, int *has_root,
                            uint32_t **ncol, uint32_t **vcol, vx_error *err) {
  uint64_t nvox = 0;
  int over = 0;
  csum *vox = color_reduce_voxels(r, n, f, threads, 0, &nvox, &over);
  if (!vox) {
    memset(root, 0, sizeof *root);
    *has_root = 0;
    *ncol = *vcol = NULL;
    return vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory");
  }
  return color_cell_finish_sums(vox, nvox, blog, f, threads, sub, root, has_root, ncol, vcol, err);
}

vx_status color_cell_finish_sums(csum *vox, uint64_t nvox, uint32_t blog, vx_color_filter f,
                                 int threads, const vx_octree *sub, csum *root, int *has_root,
                                 uint32_t **ncol, uint32_t **vcol, vx_error *err) {
  memset(root, 0, sizeof *root);
  *has_root = 0;
  *ncol = *vcol = NULL;
  csum *sums[VX_MAX_DEPTH + 1];
  uint64_t nsum[VX_MAX_DEPTH + 1];
  memset(sums, 0, sizeof sums);
  memset(nsum, 0, sizeof nsum);
  uint64_t *codes = NULL, *next = NULL;
  uint32_t *nc = NULL, *vc = NULL;
  vx_status st = VX_OK;
  int over = 0;
  sums[blog] = vox;
  nsum[blog] = nvox;
  for (uint32_t l = blog; l > 0 && sums[l]; l--)
    sums[l - 1] = color_reduce_up(sums[l], nsum[l], f, threads, 0, &nsum[l - 1], &over);
  if (!sums[0]) {
    st = vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory");
    goto done;
  }
  if (nsum[0]) {
    *root = sums[0][0];
    *has_root = 1;
  }
  if (sub && sub->nodes) {
    uint64_t widest = 1;
    for (uint32_t l = 0; l <= sub->depth; l++)
      if (sub->level_count[l] > widest) widest = sub->level_count[l];
    nc = (uint32_t *)vx_malloc((size_t)(sub->node_count ? sub->node_count : 1) * 4);
    vc = (uint32_t *)vx_malloc((size_t)(sub->voxel_count ? sub->voxel_count : 1) * 4);
    codes = (uint64_t *)vx_malloc((size_t)widest * sizeof(uint64_t));
    next = (uint64_t *)vx_malloc((size_t)widest * sizeof(uint64_t));
    if (!nc || !vc || !codes || !next)
      st = vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory");
    else
      st = color_walk(sub, sums, nsum, f, nc, vc, codes, next, threads, err);
    if (st == VX_OK) {
      *ncol = nc;
      *vcol = vc;
      nc = vc = NULL;
    }
  }
done:
  for (uint32_t l = 0; l <= blog; l++) vx_free(sums[l]);
  vx_free(codes);
  vx_free(next);
  vx_free(nc);
  vx_free(vc);
  return st;
}
