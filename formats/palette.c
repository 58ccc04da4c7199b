/* SPDX-License-Identifier: Apache-2.0 */
/* palette.c - at most 255 colours for a set of cells: exact, or median cut in OKLab (palette.h).
 */
#include "formats/palette.h"
#include "svo/color.h"
#include "sys/system.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void vx_oklab_from_linear(const float c[3], float lab[3]) {
  double l = 0.4122214708 * c[0] + 0.5363325363 * c[1] + 0.0514459929 * c[2];
  double m = 0.2119034982 * c[0] + 0.6806995451 * c[1] + 0.1073969566 * c[2];
  double s = 0.0883024619 * c[0] + 0.2817188376 * c[1] + 0.6299787005 * c[2];
  l = cbrt(l), m = cbrt(m), s = cbrt(s);
  lab[0] = (float)(0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s);
  lab[1] = (float)(1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s);
  lab[2] = (float)(0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s);
}

void vx_oklab_to_linear(const float lab[3], float c[3]) {
  double l = lab[0] + 0.3963377774 * lab[1] + 0.2158037573 * lab[2];
  double m = lab[0] - 0.1055613458 * lab[1] - 0.0638541728 * lab[2];
  double s = lab[0] - 0.0894841775 * lab[1] - 1.2914855480 * lab[2];
  l = l * l * l, m = m * m * m, s = s * s * s;
  c[0] = (float)(4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s);
  c[1] = (float)(-1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s);
  c[2] = (float)(-0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct keyed {
  float key;
  uint32_t idx;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
  const keyed *x = (const keyed *)a, *y = (const keyed *)b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx; /* deterministic */
}

typedef struct box {
  uint64_t lo, hi; /* range of order[] */
  int axis;        /* its widest OKLab axis */
  float extent;    /* and the extent along it (0: not splittable) */
} box;

static void measure(box *b, const uint32_t *order, const float (*lab)[3]) {
  float mn[3], mx[3];
  for (int a = 0; a < 3; a++) mn[a] = INFINITY, mx[a] = -INFINITY;
  for (uint64_t i = b->lo; i < b->hi; i++)
    for (int a = 0; a < 3; a++) {
      float v = lab[order[i]][a];
      if (v < mn[a]) mn[a] = v;
      if (v > mx[a]) mx[a] = v;
    }
  b->axis = 0;
  b->extent = 0.0f;
  if (b->hi - b->lo < 2) return;
  for (int a = 0; a < 3; a++)
    if (mx[a] - mn[a] > b->extent) b->extent = mx[a] - mn[a], b->axis = a;
}

/* Median cut over the distinct colours u[0 .. nu) with weights w; fills p->rgba. */
static vx_status median_cut(vx_palette *p, const uint32_t *u, const uint64_t *w, uint64_t nu,
                            vx_error *err) {
  float(*lab)[3] = (float(*)[3])vx_malloc((size_t)nu * sizeof *lab);
  uint32_t *order = (uint32_t *)vx_malloc((size_t)nu * sizeof *order);
  keyed *tmp = (keyed *)vx_malloc((size_t)nu * sizeof *tmp);
  if (!lab || !order || !tmp) {
    vx_free(lab);
    vx_free(order);
    vx_free(tmp);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the palette");
  }
  for (uint64_t i = 0; i < nu; i++) {
    float f[4];
    vx_rgba_unpack_linear(u[i] | 0xff000000u, f);
    vx_oklab_from_linear(f, lab[i]);
    order[i] = (uint32_t)i;
  }
  box boxes[VX_PALETTE_MAX];
  uint32_t nb = 1;
  boxes[0].lo = 0;
  boxes[0].hi = nu;
  measure(&boxes[0], order, (const float(*)[3])lab);
  while (nb < VX_PALETTE_MAX) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < nb; i++)
      if (boxes[i].extent > boxes[best].extent) best = i;
    box *b = &boxes[best];
    if (b->extent <= 0.0f) break;
    uint64_t n = b->hi - b->lo, total = 0;
    for (uint64_t i = 0; i < n; i++) {
      tmp[i].key = lab[order[b->lo + i]][b->axis];
      tmp[i].idx = order[b->lo + i];
      total += w[tmp[i].idx];
    }
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_keyed);
    /* the weighted median, leaving at least one colour on each side */
    uint64_t run = 0, cut = 1;
    for (uint64_t i = 0; i + 1 < n; i++) {
      run += w[tmp[i].idx];
      cut = i + 1;
      if (2 * run >= total) break;
    }
    for (uint64_t i = 0; i < n; i++) order[b->lo + i] = tmp[i].idx;
    box hi = {b->lo + cut, b->hi, 0, 0.0f};
    b->hi = b->lo + cut;
    measure(b, order, (const float(*)[3])lab);
    measure(&hi, order, (const float(*)[3])lab);
    boxes[nb++] = hi;
  }
  /* each box: the weighted mean in linear light */
  float pal[VX_PALETTE_MAX][3];
  for (uint32_t k = 0; k < nb; k++) {
    double s[3] = {0, 0, 0}, sw = 0;
    for (uint64_t i = boxes[k].lo; i < boxes[k].hi; i++) {
      float f[4];
      vx_rgba_unpack_linear(u[order[i]] | 0xff000000u, f);
      for (int a = 0; a < 3; a++) s[a] += (double)w[order[i]] * f[a];
      sw += (double)w[order[i]];
    }
    p->rgba[k] = vx_rgba_pack_linear((float)(s[0] / sw), (float)(s[1] / sw), (float)(s[2] / sw),
                                     1.0f);
    float f[4];
    vx_rgba_unpack_linear(p->rgba[k], f);
    vx_oklab_from_linear(f, pal[k]);
  }
  p->count = nb;
  /* each colour: its nearest entry in OKLab */
  for (uint64_t i = 0; i < nu; i++) {
    uint32_t best = 0;
    float bd = INFINITY;
    for (uint32_t k = 0; k < nb; k++) {
      float d0 = lab[i][0] - pal[k][0], d1 = lab[i][1] - pal[k][1], d2 = lab[i][2] - pal[k][2];
      float d = d0 * d0 + d1 * d1 + d2 * d2;
      if (d < bd) bd = d, best = k;
    }
    p->entry[i] = (uint8_t)best;
  }
  vx_free(lab);
  vx_free(order);
  vx_free(tmp);
  return VX_OK;
}

vx_status vx_palette_build(const uint32_t *colors, uint64_t n, vx_palette *p, vx_error *err) {
  memset(p, 0, sizeof *p);
  if (n == 0) return vx_error_set(err, VX_ERR_EMPTY, "no colour for a palette");
  uint32_t *u = (uint32_t *)vx_malloc((size_t)n * sizeof *u);
  if (!u) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the palette");
  for (uint64_t i = 0; i < n; i++) u[i] = colors[i] & 0xffffffu;
  qsort(u, (size_t)n, sizeof *u, cmp_u32);
  uint64_t nu = 0;
  for (uint64_t i = 0; i < n; i++)
    if (nu == 0 || u[nu - 1] != u[i]) nu++;
  uint64_t *w = (uint64_t *)vx_calloc((size_t)nu, sizeof *w);
  p->entry = (uint8_t *)vx_malloc((size_t)nu);
  if (!w || !p->entry) {
    vx_free(u);
    vx_free(w);
    vx_palette_free(p);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the palette");
  }
  nu = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (nu == 0 || u[nu - 1] != u[i]) u[nu++] = u[i];
    w[nu - 1]++;
  }
  p->colors = u;
  p->distinct = nu;
  vx_status s = VX_OK;
  if (nu <= VX_PALETTE_MAX) {
    p->exact = 1;
    p->count = (uint32_t)nu;
    for (uint64_t i = 0; i < nu; i++) {
      p->rgba[i] = u[i] | 0xff000000u;
      p->entry[i] = (uint8_t)i;
    }
  } else {
    s = median_cut(p, u, w, nu, err);
  }
  vx_free(w);
  if (s != VX_OK) vx_palette_free(p);
  return s;
}

uint32_t vx_palette_index(const vx_palette *p, uint32_t rgba) {
  uint32_t key = rgba & 0xffffffu;
  uint64_t lo = 0, hi = p->distinct;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (p->colors[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < p->distinct && p->colors[lo] == key ? p->entry[lo] : 0;
}

void vx_palette_free(vx_palette *p) {
  if (!p) return;
  vx_free(p->colors);
  vx_free(p->entry);
  p->colors = NULL;
  p->entry = NULL;
}
