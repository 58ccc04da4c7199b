/* SPDX-License-Identifier: Apache-2.0 */
/* grid_color.c - colours of a cut's grid points (grid_cut.h: vx_cut_point_colors) and the lookup
 * of a cell by its Morton code.
 *
 * A grid point is a corner of up to 8 cells of the cut; its colour is their mean in linear light
 * (svo/color.h), holes (alpha 0) weighted 1e-6 so that they count only where every cell around
 * the point is one. The band's extension (points that are no cell's corner) is coloured layer by
 * layer outwards: a point takes the mean of its 6-neighbours coloured in earlier layers, so every
 * active value of the level set has a colour, that of the surface nearest to it. Each point
 * gathers its own (the cells around it, found by galloping searches in the sorted codes, summed
 * in their order; its neighbours in the sorted keys, the same way), so the points are coloured on all cores with
 * the sums a pass over the cells would make: no table beside the 18 bytes a point the colours take
 * while they are summed.
 */
#include "formats/grid_cut.h"
#include "svo/color.h"
#include "sys/system.h"

#include <stdatomic.h>
#include <string.h>

uint64_t vx_cut_find(const vx_cut *c, uint64_t code) {
  uint64_t lo = 0, hi = c->count;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (c->codes[mid] < code) lo = mid + 1;
    else hi = mid;
  }
  return lo < c->count && c->codes[lo] == code ? lo : UINT64_MAX;
}

/* The colouring of a cut's points, shared by the passes below. */
typedef struct paint {
  const vx_cut *c;
  const uint64_t *keys;
  uint64_t n;
  uint32_t pad;
  float *col, *w;
  uint16_t *layer;
  uint16_t L;               /* the extension's layer being made */
  _Atomic uint64_t done;    /* points it coloured */
} paint;

/* Points [a, b): the weighted sums of the cells each is a corner of, in the cells' order (the
 * sums a pass over the cells would make, bit for bit), then their mean. */
static void paint_cells(void *ctx, uint64_t a, uint64_t b) {
  paint *p = (paint *)ctx;
  const vx_cut *c = p->c;
  uint64_t hint[8] = {0}; /* per corner: consecutive points have their cells near each other's */
  for (uint64_t j = a; j < b; j++) {
    uint32_t q[3];
    vx_morton_decode(p->keys[j], &q[0], &q[1], &q[2]);
    uint64_t cells[8];
    int m = 0;
    for (int o = 0; o < 8; o++) { /* the cell whose corner 7 - o is the point */
      const int64_t x = (int64_t)q[0] - p->pad - (o & 1), y = (int64_t)q[1] - p->pad - (o >> 1 & 1),
                    z = (int64_t)q[2] - p->pad - (o >> 2 & 1);
      if (x < 0 || y < 0 || z < 0 || x >= c->res || y >= c->res || z >= c->res) continue;
      const uint64_t code = vx_morton_encode((uint32_t)x, (uint32_t)y, (uint32_t)z);
      const uint64_t i = vx_gallop(c->codes, c->count, code, &hint[o]);
      if (i == c->count || c->codes[i] != code) continue;
      int k = m++;
      for (; k > 0 && cells[k - 1] > i; k--) cells[k] = cells[k - 1];
      cells[k] = i;
    }
    float *col = p->col + 3 * j;
    for (int k = 0; k < m; k++) {
      float f[4];
      vx_rgba_unpack_linear(c->rgba[cells[k]], f);
      const float wt = (c->rgba[cells[k]] >> 24) ? 1.0f : 1e-6f;
      for (int e = 0; e < 3; e++) col[e] += wt * f[e];
      p->w[j] += wt;
    }
    if (p->w[j] > 0.0f) {
      for (int e = 0; e < 3; e++) col[e] /= p->w[j];
      p->layer[j] = 1;
    }
  }
}

/* Points [a, b) of layer p->L of the band's extension: the mean of the 6-neighbours coloured in
 * earlier layers (read only: the layer's own points are not among them). */
static void paint_layer(void *ctx, uint64_t a, uint64_t b) {
  paint *p = (paint *)ctx;
  uint64_t done = 0, hint[6] = {a, a, a, a, a, a};
  for (uint64_t j = a; j < b; j++) {
    if (p->layer[j]) continue;
    uint32_t q[3];
    vx_morton_decode(p->keys[j], &q[0], &q[1], &q[2]);
    float s[3] = {0.0f, 0.0f, 0.0f};
    int m = 0;
    for (int d = 0; d < 6; d++) {
      uint32_t r[3] = {q[0], q[1], q[2]};
      if (!(d & 1) && r[d >> 1] == 0) continue;
      r[d >> 1] += (d & 1) ? 1u : (uint32_t)-1;
      const uint64_t key = vx_morton_encode(r[0], r[1], r[2]);
      const uint64_t k = vx_gallop(p->keys, p->n, key, &hint[d]);
      if (k == p->n || p->keys[k] != key || p->layer[k] == 0 || p->layer[k] >= p->L) continue;
      for (int e = 0; e < 3; e++) s[e] += p->col[3 * k + e];
      m++;
    }
    if (!m) continue;
    for (int e = 0; e < 3; e++) p->col[3 * j + e] = s[e] / (float)m;
    p->layer[j] = p->L;
    done++;
  }
  atomic_fetch_add(&p->done, done);
}

vx_status vx_cut_point_colors(const vx_cut *c, const uint64_t *keys, uint64_t n, uint32_t pad,
                              uint64_t mem_limit, float **rgb, vx_error *err) {
  *rgb = NULL;
  if (!c->rgba) return vx_error_set(err, VX_ERR_INVALID_ARG, "the cut has no colour");
  uint64_t limit = mem_limit ? mem_limit : vx_default_mem_limit(), rss = vx_resident_bytes();
  if ((double)n * 18.0 + (double)rss > (double)limit) {
    char a[32];
    return vx_error_set(err, VX_ERR_LIMIT, "the colours of %llu grid points do not fit the memory "
                        "limit (%s)", (unsigned long long)n,
                        vx_bytes_text((double)limit, a, sizeof a));
  }
  paint p;
  memset(&p, 0, sizeof p);
  p.c = c;
  p.keys = keys;
  p.n = n;
  p.pad = pad;
  p.col = (float *)vx_calloc((size_t)(n ? n : 1) * 3, sizeof(float));
  p.w = (float *)vx_calloc((size_t)(n ? n : 1), sizeof(float));
  p.layer = (uint16_t *)vx_calloc((size_t)(n ? n : 1), sizeof(uint16_t));
  if (!p.col || !p.w || !p.layer) {
    vx_free(p.col);
    vx_free(p.w);
    vx_free(p.layer);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the grid points' colours");
  }
  vx_ranges_run(0, n, paint_cells, &p);
  uint64_t open = 0;
  for (uint64_t j = 0; j < n; j++) open += p.layer[j] == 0;
  /* the band's extension: layer by layer outwards */
  for (p.L = 2; open && p.L < 65535; p.L++) {
    atomic_store(&p.done, 0);
    vx_ranges_run(0, n, paint_layer, &p);
    const uint64_t done = atomic_load(&p.done);
    if (!done) break; /* points cut off from every cell (none in a level set's band) */
    open -= done;
  }
  vx_free(p.w);
  vx_free(p.layer);
  *rgb = p.col;
  return VX_OK;
}
