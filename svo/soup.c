/* SPDX-License-Identifier: Apache-2.0 */
/* soup.c - the triangle soup: append with filtering of degenerate and non-finite triangles, with
 * the triangles' colour attributes in step when the soup has colour. */
#include "svo/soup.h"
#include "sys/alloc.h"
#include "sys/system.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void vx_soup_color_free(vx_soup_color *c) {
  if (!c) return;
  for (uint32_t i = 0; i < c->texture_count && c->textures; i++) vx_free(c->textures[i].rgba);
  vx_free(c->textures);
  vx_free(c->materials);
  vx_free(c->material);
  vx_free(c->uv);
  vx_free(c->corner_rgba);
  vx_free(c->warnings);
  vx_free(c);
}

void vx_soup_free(vx_soup *m) {
  if (!m) return;
  vx_free(m->pos);
  vx_soup_color_free(m->color);
  memset(m, 0, sizeof *m);
}

static int tri_finite(const float *p) {
  for (int i = 0; i < 9; i++)
    if (!isfinite(p[i])) return 0;
  return 1;
}

static int tri_degenerate(const float *p) {
  double e1[3], e2[3];
  for (int i = 0; i < 3; i++) {
    e1[i] = (double)p[3 + i] - p[i];
    e2[i] = (double)p[6 + i] - p[i];
  }
  double cx = e1[1] * e2[2] - e1[2] * e2[1];
  double cy = e1[2] * e2[0] - e1[0] * e2[2];
  double cz = e1[0] * e2[1] - e1[1] * e2[0];
  return cx == 0.0 && cy == 0.0 && cz == 0.0;
}

int vx_soup_tri_check(const float *pos9) {
  return !tri_finite(pos9) ? VX_TRI_NONFINITE : tri_degenerate(pos9) ? VX_TRI_DEGENERATE
                                                                    : VX_TRI_USABLE;
}

int vx_soup_tri_usable(const float *pos9) { return vx_soup_tri_check(pos9) == VX_TRI_USABLE; }

/* Grows the colour arrays of m to hold `need` triangles; creates uv/corner arrays when asked,
 * back-filling the triangles already there (uv 0, corners white). */
static vx_status color_grow(vx_soup *m, uint64_t need, int want_uv, int want_rgba, vx_error *err) {
  vx_soup_color *c = m->color;
  uint32_t *mat = (uint32_t *)vx_realloc(c->material, (size_t)need * sizeof(uint32_t));
  if (!mat) goto nomem;
  c->material = mat;
  if (c->uv || want_uv) {
    float *g = (float *)vx_realloc(c->uv, (size_t)need * 6 * sizeof(float));
    if (!g) goto nomem;
    if (!c->uv) memset(g, 0, (size_t)m->tri_count * 6 * sizeof(float));
    c->uv = g;
  }
  if (c->corner_rgba || want_rgba) {
    uint32_t *g = (uint32_t *)vx_realloc(c->corner_rgba, (size_t)need * 3 * sizeof(uint32_t));
    if (!g) goto nomem;
    if (!c->corner_rgba)
      for (uint64_t i = 0; i < m->tri_count * 3; i++) g[i] = 0xffffffffu;
    c->corner_rgba = g;
  }
  return VX_OK;
nomem:
  return vx_error_set(err, VX_ERR_NOMEM, "cannot hold the colours of %llu triangles in memory",
                      (unsigned long long)need);
}

/* Both appends: the triangles, and with m->color set their attributes in step (NULL attribute
 * arrays: material 0, uv 0, corners white). */
static vx_status append_tris(vx_soup *m, const float *pos9, const uint32_t *material,
                             const float *uv6, const uint32_t *rgba3, uint64_t tri_count,
                             vx_error *err) {
  if (tri_count == 0) return VX_OK;
  vx_soup_color *c = m->color;
  if (c && material)
    for (uint64_t t = 0; t < tri_count; t++)
      if (material[t] >= c->material_count)
        return vx_error_set(err, VX_ERR_INVALID_ARG,
                            "triangle %llu names material %u of %u", (unsigned long long)t,
                            material[t], c->material_count);
  if (m->tri_count == 0 && m->pos == NULL) {
    for (int i = 0; i < 3; i++) {
      m->bbox_min[i] = INFINITY;
      m->bbox_max[i] = -INFINITY;
    }
  }
  if (tri_count > (UINT64_C(1) << 32) || m->tri_count + tri_count > (UINT64_C(1) << 32))
    return vx_error_set(err, VX_ERR_LIMIT, "more than 2^32 triangles");
  uint64_t need = m->tri_count + tri_count;
  float *grown = (float *)vx_realloc(m->pos, (size_t)need * 9 * sizeof(float));
  if (!grown)
    return vx_error_set(err, VX_ERR_NOMEM, "cannot hold %llu triangles in memory",
                        (unsigned long long)need);
  m->pos = grown;
  if (c) {
    vx_status s = color_grow(m, need, uv6 != NULL, rgba3 != NULL, err);
    if (s != VX_OK) return s;
  }
  for (uint64_t t = 0; t < tri_count; t++) {
    const float *p = pos9 + t * 9;
    const int why = vx_soup_tri_check(p);
    if (why != VX_TRI_USABLE) {
      m->skipped_nonfinite += why == VX_TRI_NONFINITE;
      m->skipped_degenerate += why == VX_TRI_DEGENERATE;
      continue;
    }
    uint64_t k = m->tri_count;
    memcpy(m->pos + k * 9, p, 9 * sizeof(float));
    for (int v = 0; v < 3; v++)
      for (int i = 0; i < 3; i++) {
        double x = p[v * 3 + i];
        if (x < m->bbox_min[i]) m->bbox_min[i] = x;
        if (x > m->bbox_max[i]) m->bbox_max[i] = x;
      }
    if (c) {
      c->material[k] = material ? material[t] : 0;
      if (c->uv)
        for (int i = 0; i < 6; i++) {
          float u = uv6 ? uv6[t * 6 + (uint64_t)i] : 0.0f;
          c->uv[k * 6 + (uint64_t)i] = isfinite(u) ? u : 0.0f;
        }
      if (c->corner_rgba)
        for (int i = 0; i < 3; i++)
          c->corner_rgba[k * 3 + (uint64_t)i] = rgba3 ? rgba3[t * 3 + (uint64_t)i] : 0xffffffffu;
    }
    m->tri_count++;
  }
  return VX_OK;
}

vx_status vx_soup_append(vx_soup *m, const float *pos9, uint64_t tri_count, vx_error *err) {
  return append_tris(m, pos9, NULL, NULL, NULL, tri_count, err);
}

vx_status vx_soup_append_color(vx_soup *m, const float *pos9, const uint32_t *material,
                               const float *uv6, const uint32_t *rgba3, uint64_t tri_count,
                               vx_error *err) {
  if (!m->color)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "coloured triangles for a soup without colour");
  return append_tris(m, pos9, material, uv6, rgba3, tri_count, err);
}

/* vx_soup_keep: each range keeps its usable triangles at its start, counts the others and bounds
 * what it keeps; the ranges are then joined in order. */
typedef struct keep_range {
  uint64_t kept, nonfinite, degenerate;
  double lo[3], hi[3];
} keep_range;

typedef struct keep_job {
  float *tri;
  keep_range *r;
} keep_job;

static void keep_check(void *ctx, uint64_t a, uint64_t z) {
  const keep_job *j = (const keep_job *)ctx;
  keep_range *r = &j->r[a / VX_RANGE_CHUNK];
  memset(r, 0, sizeof *r);
  for (int i = 0; i < 3; i++) r->lo[i] = INFINITY, r->hi[i] = -INFINITY;
  for (uint64_t t = a; t < z; t++) {
    const float *p = j->tri + 9 * t;
    const int why = vx_soup_tri_check(p);
    r->nonfinite += why == VX_TRI_NONFINITE;
    r->degenerate += why == VX_TRI_DEGENERATE;
    if (why != VX_TRI_USABLE) continue;
    for (int v = 0; v < 3; v++)
      for (int i = 0; i < 3; i++) {
        const double x = p[3 * v + i];
        if (x < r->lo[i]) r->lo[i] = x;
        if (x > r->hi[i]) r->hi[i] = x;
      }
    float *d = j->tri + 9 * (a + r->kept++);
    if (d != p) memcpy(d, p, 9 * sizeof(float));
  }
}

vx_status vx_soup_keep(vx_soup *m, uint64_t n, int threads, vx_error *err) {
  if (m->tri_count == 0)
    for (int i = 0; i < 3; i++) m->bbox_min[i] = INFINITY, m->bbox_max[i] = -INFINITY;
  if (!n) return VX_OK;
  const uint64_t nr = (n + VX_RANGE_CHUNK - 1) / VX_RANGE_CHUNK;
  keep_job j;
  j.tri = m->pos + 9 * m->tri_count;
  j.r = (keep_range *)vx_malloc((size_t)nr * sizeof *j.r);
  if (!j.r) return vx_error_set(err, VX_ERR_NOMEM, "out of memory checking %llu triangles",
                                (unsigned long long)n);
  vx_ranges_run(threads, n, keep_check, &j);
  for (uint64_t k = 0; k < nr; k++) {
    const keep_range *r = &j.r[k];
    float *src = j.tri + 9 * k * VX_RANGE_CHUNK, *dst = m->pos + 9 * m->tri_count;
    if (dst != src) memmove(dst, src, (size_t)r->kept * 9 * sizeof(float));
    m->tri_count += r->kept;
    m->skipped_nonfinite += r->nonfinite;
    m->skipped_degenerate += r->degenerate;
    for (int i = 0; i < 3; i++) {
      if (r->lo[i] < m->bbox_min[i]) m->bbox_min[i] = r->lo[i];
      if (r->hi[i] > m->bbox_max[i]) m->bbox_max[i] = r->hi[i];
    }
  }
  vx_free(j.r);
  return VX_OK;
}
