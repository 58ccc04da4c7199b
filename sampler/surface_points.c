/* SPDX-License-Identifier: Apache-2.0 */
/* surface_points.c - points spread over the surface voxels, for training sets and benchmarks.
 *
 * Stratified sampling: point i belongs to voxel floor((i + u_i) V / n) of the V surface voxels
 * (u_i uniform in [0,1)), so voxel indices grow with i and every part of the surface gets its
 * share, without a table of V counts. One depth-first walk of the tree in slot order visits the
 * voxels in index (Morton) order with their coordinates; a fixed stack of (node, level, corner)
 * per level is all the memory it needs. Offsets and the optional shuffle come from splitmix64
 * (Steele, Lea & Flood 2014), so a seed gives the same points on every machine.
 */
#include "sampler/sampler.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 bits. */
static double uniform01(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1p-53; }

typedef struct emit_state {
  const vx_octree *t;
  uint64_t n, next;  /* points, the next point to place */
  double next_voxel; /* (next + u) * V / n: the voxel it belongs to */
  double spread;
  uint64_t rng;
  float *points;
} emit_state;

static void advance(emit_state *e) {
  e->next_voxel = e->next < e->n
                      ? floor(((double)e->next + uniform01(&e->rng)) * (double)e->t->voxel_count /
                              (double)e->n)
                      : INFINITY;
}

/* Places every point that belongs to voxel k at grid corner m. */
static void emit(emit_state *e, uint64_t k, const uint32_t m[3]) {
  const vx_transform *xf = &e->t->xf;
  while (e->next_voxel == (double)k) {
    float *p = e->points + 3 * e->next;
    for (int i = 0; i < 3; i++) {
      double g = (double)m[i] + 0.5 + (2.0 * uniform01(&e->rng) - 1.0) * e->spread;
      p[i] = (float)(xf->origin[i] + g * xf->scale);
    }
    e->next++;
    advance(e);
  }
}

vx_status vx_octree_surface_points(const vx_octree *t, uint64_t n, float spread, uint64_t seed,
                                   int shuffle, float *points, vx_error *err) {
  if (!t || !t->nodes || t->levels_loaded < t->depth + 1 || !t->voxels || t->voxel_count == 0)
    return vx_error_set(err, VX_ERR_EMPTY,
                        "surface points need the tree's surface voxels (the finest level loaded)");
  if (!(spread >= 0.0f) || !(spread <= 1e6f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "spread %g is not a number in [0, 1e6] voxels",
                        (double)spread);
  if (n == 0) return VX_OK;
  if (!points) return vx_error_set(err, VX_ERR_INVALID_ARG, "no memory for the points");
  emit_state e;
  e.t = t;
  e.n = n;
  e.next = 0;
  e.spread = spread;
  e.rng = seed;
  e.points = points;
  advance(&e);
  const uint32_t D = t->depth;
  /* depth first, children pushed in reverse slot order so that they pop in index order */
  uint32_t s_idx[8 * VX_MAX_DEPTH + 8], s_lvl[8 * VX_MAX_DEPTH + 8], s_min[8 * VX_MAX_DEPTH + 8][3];
  int sp = 1;
  s_idx[0] = 0;
  s_lvl[0] = 0;
  s_min[0][0] = s_min[0][1] = s_min[0][2] = 0;
  while (sp > 0 && e.next < n) {
    sp--;
    uint32_t idx = s_idx[sp], l = s_lvl[sp], m[3] = {s_min[sp][0], s_min[sp][1], s_min[sp][2]};
    const vx_node *nd = &t->nodes[idx];
    uint32_t mask = vx_node_mask(nd->info), h = 1u << (D - l - 1);
    for (int slot = 7; slot >= 0; slot--) {
      if (!(mask >> slot & 1u)) continue;
      uint32_t c[3] = {m[0] + (slot & 1u) * h, m[1] + (slot >> 1 & 1u) * h,
                       m[2] + (slot >> 2 & 1u) * h};
      uint32_t ci = vx_child_index(nd->child, mask, (uint32_t)slot);
      if (l + 1 == D) continue; /* voxels: emitted below, in slot order */
      s_idx[sp] = ci;
      s_lvl[sp] = l + 1;
      s_min[sp][0] = c[0];
      s_min[sp][1] = c[1];
      s_min[sp][2] = c[2];
      sp++;
    }
    if (l + 1 == D)
      for (uint32_t slot = 0; slot < 8; slot++) {
        if (!(mask >> slot & 1u)) continue;
        uint32_t c[3] = {m[0] + (slot & 1u), m[1] + (slot >> 1 & 1u), m[2] + (slot >> 2 & 1u)};
        emit(&e, vx_child_index(nd->child, mask, slot), c);
      }
  }
  if (e.next != n)
    return vx_error_set(err, VX_ERR_CORRUPT, "surface points: %llu of %llu placed (tree counts)",
                        (unsigned long long)e.next, (unsigned long long)n);
  if (shuffle)
    for (uint64_t i = n - 1; i > 0; i--) {
      uint64_t j = splitmix64(&e.rng) % (i + 1);
      for (int k = 0; k < 3; k++) {
        float a = points[3 * i + k];
        points[3 * i + k] = points[3 * j + k];
        points[3 * j + k] = a;
      }
    }
  return VX_OK;
}
