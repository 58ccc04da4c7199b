/* SPDX-License-Identifier: Apache-2.0 */
/* color_block.c - the colour pass of the streaming build (ooc.c), one block at a time, with the
 * bytes of the pass over the whole tree (color.c, whose header tells the rules).
 *
 * A block is an aligned B^3 range of voxels, the cell of one node at level S = D - log2 B. Every
 * sum of the whole pass below level S is a sum over parts in one block, so it can be made there:
 * 1. The triangles of the block's bin (ascending indices, so records come in triangle order) are
 *    clipped against the block's box only (clip_triangle_box: the same splits, hence the same
 *    parts, as the whole walk); a triangle on an inner grid plane also gives the voxel below the
 *    plane, so the box reaches one slab further on that axis, and records outside the block are
 *    dropped. The records are those color.c makes for the same parts, bit for bit.
 * 2. Sorted by (code, triangle) on their block-local codes and reduced per voxel, then up to the
 *    block's root, in the same order as the whole pass sums them: the same doubles.
 * 3. The block's subtree is walked from its root as color_walk walks the tree (color_sum.c).
 *    A cell's colour depends on its ancestors only when no part reached it or all its parts are
 *    cut out, and then only through their rgb. So when the root's own colour is its own (some
 *    opaque area below it), every colour of the block is final; otherwise every cell of the block
 *    takes its rgb from the root's nearest coloured ancestor (alpha as computed here), which the
 *    builder patches in once the levels above S are coloured (color_top).
 * 4. color_top: the roots' sums reduced up to level 0 and the top levels walked, as the whole
 *    pass does for them.
 */
#include "voxelizer/color_tex.h"
#define CPART_LEVEL(view, level) ctex_cpu_level(view, level, lut)
#include "voxelizer/color_part.h"
#include "voxelizer/color_block.h"
#include "voxelizer/internal.h"
#include "svo/color.h"
#include "sys/system.h"

#include <string.h>

typedef struct blk_emit {
  const float *lut;
  const ctri *ti;
  int plane;
  uint32_t tri, sh;
  uint64_t bcode, mask;
  color_block_scratch *s;
  int nomem, over;
} blk_emit;

/* Charges the scratch's records (recs and tmp, of cap records each) to the pool: 0 when over it. */
static int charge(color_block_scratch *s, uint64_t cap) {
  const uint64_t now = 2 * cap * sizeof(crec);
  if (!s->pool || now <= s->held) return 1;
  const uint64_t d = now - s->held;
  const uint64_t u = __atomic_fetch_add(&s->pool->used, d, __ATOMIC_RELAXED);
  if (s->pool->cap && u + d > s->pool->cap) {
    __atomic_fetch_sub(&s->pool->used, d, __ATOMIC_RELAXED);
    return 0;
  }
  s->held = now;
  return 1;
}

static void blk_part(void *vctx, const clip_poly *P, double area, uint32_t x, uint32_t y,
                     uint32_t z) {
  blk_emit *e = (blk_emit *)vctx;
  color_block_scratch *s = e->s;
  if (e->nomem || e->over) return;
  if (s->n + 2 > s->cap) {
    uint64_t cap = s->cap * 2 + 256;
    if (!charge(s, cap)) {
      e->over = 1;
      return;
    }
    crec *b = (crec *)vx_realloc(s->recs, (size_t)cap * sizeof(crec));
    if (!b) {
      e->nomem = 1;
      return;
    }
    s->recs = b;
    s->cap = cap;
  }
  crec r[2];
  int k = cpart_records(e->lut, e->ti, P, area, x, y, z, e->plane, e->tri, r);
  for (int i = 0; i < k; i++)
    if (cpart_in_cell(r[i].code, e->sh, e->bcode, e->mask, &r[i].code)) s->recs[s->n++] = r[i];
}

void color_block_scratch_free(color_block_scratch *s) {
  if (s->pool && s->held) __atomic_fetch_sub(&s->pool->used, s->held, __ATOMIC_RELAXED);
  s->held = 0;
  vx_free(s->recs);
  vx_free(s->tmp);
  s->recs = s->tmp = NULL;
  s->n = s->cap = s->tmp_cap = 0;
}

void color_block_free(color_block_out *o) {
  vx_free(o->ncol);
  vx_free(o->vcol);
  memset(o, 0, sizeof *o);
}

vx_status color_block(const color_source *cs, const vx_transform *xf, uint32_t depth,
                      uint32_t blog, uint64_t bcode, const uint32_t *tris, uint64_t ntris,
                      const vx_octree *sub, color_block_scratch *s, color_block_out *out,
                      vx_error *err) {
  memset(out, 0, sizeof *out);
  const uint32_t R = 1u << depth, B = 1u << blog;
  const vx_soup *soup = cs->soup;
  uint32_t bx, by, bz;
  vx_morton_decode(bcode, &bx, &by, &bz);
  const int64_t lo0[3] = {(int64_t)bx * B, (int64_t)by * B, (int64_t)bz * B};
  blk_emit e;
  memset(&e, 0, sizeof e);
  e.lut = cs->lut;
  e.sh = 3 * blog;
  e.bcode = bcode;
  e.mask = blog ? ((uint64_t)1 << (3 * blog)) - 1 : 0;
  e.s = s;
  s->n = 0;
  for (uint64_t i = 0; i < ntris && !e.nomem && !e.over; i++) {
    const uint64_t t = tris[i];
    double g[9];
    vx_grid_tri(soup, xf, t, g);
    double min_area = vx_grid_tri_area(g) * 1e-12; /* as color.c */
    ctri ti;
    cpart_tri(&cs->src, t, &ti);
    e.ti = &ti;
    e.tri = (uint32_t)t;
    e.plane = clip_on_plane(g, R);
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
      lo[a] = lo0[a];
      hi[a] = lo0[a] + B - 1 + (a == e.plane); /* a part above the plane gives the voxel below */
    }
    clip_triangle_box(g, R, min_area, lo, hi, blk_part, &e);
  }
  if (e.nomem)
    return vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory for %llu triangle parts",
                        (unsigned long long)s->n);
  if (e.over) {
    char a[32], b[32];
    return vx_error_set(err, VX_ERR_LIMIT, "colour: the triangle parts of one block (more than "
                        "%llu, %s) pass what the memory limit leaves for them (%s)",
                        (unsigned long long)s->n,
                        vx_bytes_text(2.0 * (double)s->n * sizeof(crec), a, sizeof a),
                        vx_bytes_text(s->pool ? (double)s->pool->cap : 0.0, b, sizeof b));
  }
  const uint64_t n = s->n;
  if (n > s->tmp_cap) {
    crec *t = (crec *)vx_realloc(s->tmp, (size_t)s->cap * sizeof(crec));
    if (!t) return vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory to sort parts");
    s->tmp = t;
    s->tmp_cap = s->cap;
  }
  if (!color_sort(s->recs, s->tmp, n, 3 * blog, 1))
    return vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory to sort parts");
  vx_status st = color_cell_finish(s->recs, n, blog, cs->filter, 1, sub, &out->root,
                                   &out->has_root, &out->ncol, &out->vcol, err);
  out->root.code = bcode; /* the root's sums under the block's code at level S */
  out->self = out->has_root && out->root.area > 0.0 && out->root.a > 0.0;
  if (st != VX_OK) color_block_free(out);
  return st;
}

/* The voxels' sums of a tile, reduced piece by piece as the sorted records come back. */
typedef struct vox_sums {
  csum *s;
  uint64_t n, cap;
  vx_color_filter f;
  int threads;
  double seconds; /* spent reducing */
} vox_sums;

static vx_status take_records(void *ctx, const crec *r, uint64_t n, vx_error *err) {
  vox_sums *v = (vox_sums *)ctx;
  const double t0 = vx_clock_seconds();
  uint64_t k = 0;
  while (!color_reduce_voxels_into(r, n, v->f, v->threads, v->s + v->n, v->cap - v->n, &k)) {
    const uint64_t want = v->n + k > v->cap + v->cap / 2 ? v->n + k : v->cap + v->cap / 2;
    csum *g = (csum *)vx_realloc(v->s, (size_t)want * sizeof(csum));
    if (!g) return vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory for the voxels' sums");
    v->s = g;
    v->cap = want;
  }
  v->n += k;
  v->seconds += vx_clock_seconds() - t0;
  return VX_OK;
}

vx_status color_tile_gpu(const color_source *cs, const vx_transform *xf, uint32_t depth,
                         uint32_t blog, uint64_t bcode, const uint32_t *tris, uint64_t ntris,
                         vx_octree *sub, int threads, uint64_t max_recs, vx_host_stage *stage,
                         csum *root, int *has_root, double sec[4], vx_error *err) {
  memset(root, 0, sizeof *root);
  *has_root = 0;
  /* the device samples every level of the pyramids */
  for (uint32_t i = 0; i < cs->soup->color->texture_count; i++)
    if (cs->used[i] && !ctex_mips(&cs->tex[i], cs->lut))
      return vx_error_set(err, VX_ERR_NOMEM, "no memory for the textures' mip levels");
  if (sec) sec[0] = sec[1] = sec[2] = sec[3] = 0.0;
  color_region reg;
  reg.tris = tris;
  reg.ntris = ntris;
  reg.blog = blog;
  reg.bcode = bcode;
  crec *recs = NULL;
  uint64_t n = 0;
  int sorted = 0;
  /* sorted on the device, the records come back in pieces reduced to the voxels' sums as they
   * come (a piece and the sums held, not every record beside them) */
  vox_sums v;
  memset(&v, 0, sizeof v);
  v.f = cs->filter;
  v.threads = threads;
  v.cap = sub && sub->voxel_count ? sub->voxel_count : 1;
  v.s = (csum *)vx_malloc((size_t)v.cap * sizeof(csum));
  if (!v.s) return vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory for the voxels' sums");
  color_sink sink = {take_records, &v, stage};
  vx_status st = color_records_gpu(cs->soup, xf, 1u << depth, &cs->src, &reg, max_recs, &sink,
                                   &recs, &n, &sorted, sec, err);
  if (st != VX_OK) {
    vx_free(v.s);
    return st;
  }
  if (!sorted) { /* whole and unsorted: sorted and reduced here */
    crec *tmp = (crec *)vx_malloc((size_t)(n ? n : 1) * sizeof(crec));
    const int ok = tmp && color_sort(recs, tmp, n, 3 * blog, threads);
    vx_free(tmp);
    vx_free(v.s);
    v.s = NULL;
    const double t1 = vx_clock_seconds();
    int over = 0;
    if (ok) v.s = color_reduce_voxels(recs, n, cs->filter, threads, 0, &v.n, &over);
    v.seconds = vx_clock_seconds() - t1;
    vx_free(recs);
    if (!v.s)
      return vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory to sort and sum %llu parts",
                          (unsigned long long)n);
  } else if (sec) {
    sec[2] -= v.seconds; /* the reduction ran inside the copy back: it counts as the sums' */
  }
  uint32_t *ncol = NULL, *vcol = NULL;
  const double t0 = vx_clock_seconds();
  st = color_cell_finish_sums(v.s, v.n, blog, cs->filter, threads, sub, root, has_root, &ncol,
                              &vcol, err);
  if (sec) sec[3] = vx_clock_seconds() - t0 + v.seconds;
  if (st != VX_OK) return st;
  vx_free(sub->node_color);
  vx_free(sub->voxel_color);
  sub->node_color = ncol;
  sub->voxel_color = vcol;
  return VX_OK;
}

vx_status color_top(vx_octree *t, uint32_t split, const csum *roots, uint64_t nroots,
                    vx_color_filter f, uint32_t **top_color, uint32_t *root_color,
                    csum *top_sum, vx_error *err) {
  *top_color = NULL;
  if (top_sum) memset(top_sum, 0, sizeof *top_sum);
  const uint32_t S = split;
  csum *sums[VX_MAX_DEPTH + 1];
  uint64_t nsum[VX_MAX_DEPTH + 1];
  memset(sums, 0, sizeof sums);
  memset(nsum, 0, sizeof nsum);
  uint64_t *codes = NULL, *next = NULL;
  uint32_t *ncol = NULL;
  vx_status st = VX_OK;
  int over = 0;
  sums[S] = (csum *)vx_malloc((size_t)(nroots ? nroots : 1) * sizeof(csum));
  if (sums[S]) memcpy(sums[S], roots, (size_t)nroots * sizeof(csum));
  nsum[S] = nroots;
  for (uint32_t l = S; l > 0 && sums[l]; l--)
    sums[l - 1] = color_reduce_up(sums[l], nsum[l], f, 1, 0, &nsum[l - 1], &over);
  uint64_t widest = 1;
  for (uint32_t l = 0; l <= S; l++)
    if (t->level_count[l] > widest) widest = t->level_count[l];
  ncol = (uint32_t *)vx_malloc((size_t)(t->node_count ? t->node_count : 1) * 4);
  codes = (uint64_t *)vx_malloc((size_t)widest * sizeof(uint64_t));
  next = (uint64_t *)vx_malloc((size_t)widest * sizeof(uint64_t));
  if (!sums[0] || !ncol || !codes || !next) {
    st = vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory for the top levels");
    goto done;
  }
  {
    /* levels 0 .. S as a tree of depth S whose level S are its "voxels": the children of level
     * S-1 indexed from level S's start while it is walked */
    const uint32_t depth = t->depth;
    vx_node *last = t->nodes + t->level_first[S - 1];
    const uint64_t base = t->level_first[S];
    for (uint64_t k = 0; k < t->level_count[S - 1]; k++) last[k].child -= (uint32_t)base;
    t->depth = S;
    st = color_walk(t, sums, nsum, f, ncol, root_color, codes, next, 1, err);
    t->depth = depth;
    for (uint64_t k = 0; k < t->level_count[S - 1]; k++) last[k].child += (uint32_t)base;
  }
  if (st == VX_OK) {
    *top_color = ncol;
    ncol = NULL;
    if (top_sum && nsum[0]) *top_sum = sums[0][0];
  }
done:
  for (uint32_t l = 0; l <= S; l++) vx_free(sums[l]);
  vx_free(codes);
  vx_free(next);
  vx_free(ncol);
  return st;
}
