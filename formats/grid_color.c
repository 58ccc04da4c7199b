/* SPDX-License-Identifier: Apache-2.0 */
/* grid_color.c - colours of a cut's grid points (grid_cut.h: vx_cut_point_colors) and the lookup
 * of a cell by its Morton code.
 *
 * A grid point is a corner of up to 8 cells of the cut; its colour is their mean in linear light
 * (svo/color.h), holes (alpha 0) weighted 1e-6 so that they count only where every cell around
 * the point is one. The band's extension (points that are no cell's corner) is coloured layer by
 * layer outwards: a point takes the mean of its 6-neighbours coloured in earlier layers, so every
 * active value of the level set has a colour, that of the surface nearest to it. The points are
 * found by binary search in their sorted keys: no table beside the 16 bytes a point the colours
 * take while they are summed.
 */
#include "formats/grid_cut.h"
#include "svo/color.h"
#include "sys/system.h"

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

static uint64_t find_key(const uint64_t *keys, uint64_t n, uint64_t key) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && keys[lo] == key ? lo : UINT64_MAX;
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
  float *col = (float *)vx_calloc((size_t)(n ? n : 1) * 3, sizeof(float));
  float *w = (float *)vx_calloc((size_t)(n ? n : 1), sizeof(float));
  uint16_t *layer = (uint16_t *)vx_calloc((size_t)(n ? n : 1), sizeof(uint16_t));
  if (!col || !w || !layer) {
    vx_free(col);
    vx_free(w);
    vx_free(layer);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the grid points' colours");
  }
  for (uint64_t i = 0; i < c->count; i++) {
    uint32_t x, y, z;
    vx_morton_decode(c->codes[i], &x, &y, &z);
    float f[4];
    vx_rgba_unpack_linear(c->rgba[i], f);
    float wt = (c->rgba[i] >> 24) ? 1.0f : 1e-6f;
    for (int k = 0; k < 8; k++) {
      uint64_t key =
          vx_morton_encode(x + pad + (k & 1), y + pad + (k >> 1 & 1), z + pad + (k >> 2 & 1));
      uint64_t j = find_key(keys, n, key);
      if (j == UINT64_MAX) continue;
      for (int a = 0; a < 3; a++) col[3 * j + a] += wt * f[a];
      w[j] += wt;
    }
  }
  uint64_t open = 0;
  for (uint64_t j = 0; j < n; j++) {
    if (w[j] > 0.0f) {
      for (int a = 0; a < 3; a++) col[3 * j + a] /= w[j];
      layer[j] = 1;
    } else {
      open++;
    }
  }
  /* the band's extension: layer by layer outwards */
  for (uint16_t L = 2; open && L < 65535; L++) {
    uint64_t done = 0;
    for (uint64_t j = 0; j < n; j++) {
      if (layer[j]) continue;
      uint32_t p[3];
      vx_morton_decode(keys[j], &p[0], &p[1], &p[2]);
      float s[3] = {0.0f, 0.0f, 0.0f};
      int m = 0;
      for (int d = 0; d < 6; d++) {
        uint32_t q[3] = {p[0], p[1], p[2]};
        if (!(d & 1) && q[d >> 1] == 0) continue;
        q[d >> 1] += (d & 1) ? 1u : (uint32_t)-1;
        uint64_t k = find_key(keys, n, vx_morton_encode(q[0], q[1], q[2]));
        if (k == UINT64_MAX || layer[k] == 0 || layer[k] >= L) continue;
        for (int a = 0; a < 3; a++) s[a] += col[3 * k + a];
        m++;
      }
      if (!m) continue;
      for (int a = 0; a < 3; a++) col[3 * j + a] = s[a] / (float)m;
      layer[j] = L;
      done++;
    }
    if (!done) break; /* points cut off from every cell (none in a level set's band) */
    open -= done;
  }
  vx_free(w);
  vx_free(layer);
  *rgb = col;
  return VX_OK;
}
