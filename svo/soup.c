/* SPDX-License-Identifier: Apache-2.0 */
/* mesh.c - the triangle soup: append with filtering of degenerate and non-finite triangles. */
#include "svo/soup.h"

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

vx_status vx_soup_append(vx_soup *m, const float *pos9, uint64_t tri_count, vx_error *err) {
  if (tri_count == 0) return VX_OK;
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
  for (uint64_t t = 0; t < tri_count; t++) {
    const float *p = pos9 + t * 9;
    if (!tri_finite(p)) {
      m->skipped_nonfinite++;
      continue;
    }
    if (tri_degenerate(p)) {
      m->skipped_degenerate++;
      continue;
    }
    memcpy(m->pos + m->tri_count * 9, p, 9 * sizeof(float));
    for (int v = 0; v < 3; v++)
      for (int i = 0; i < 3; i++) {
        double c = p[v * 3 + i];
        if (c < m->bbox_min[i]) m->bbox_min[i] = c;
        if (c > m->bbox_max[i]) m->bbox_max[i] = c;
      }
    m->tri_count++;
  }
  return VX_OK;
}
