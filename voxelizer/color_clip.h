/* SPDX-License-Identifier: Apache-2.0 */
/* color_clip.h - a triangle cut into its parts in the voxels of the finest grid (the colour pass,
 * color.c).
 *
 * The triangle, in grid coordinates (double), is split slab by slab: at the planes x = i, then
 * each x slab's piece at y = j, then each of those at z = k (Sutherland-Hodgman against one plane
 * at a time, both halves kept). Each vertex carries its barycentric weights (b1, b2) of the
 * triangle's corners 1 and 2, interpolated with the position, so the colour of any point of a
 * part is known. Every point of the triangle lies in exactly one part: slab i holds
 * i <= x < i + 1 (the first and last slab of the grid also what lies beyond it, against
 * round-off), so the parts' areas add up to the triangle's. A triangle lying exactly on an inner
 * grid plane (x = i, 0 < i < R, and so on) touches the voxels on both sides, as the voxelizer
 * sets them; the caller gives each side half of each part (clip_on_plane says which axis).
 */
#ifndef VOXLOD_VOXELIZER_COLOR_CLIP_H
#define VOXLOD_VOXELIZER_COLOR_CLIP_H

#include <math.h>
#include <stdint.h>

#include "svo/hostdev.h"

/* A triangle clipped by 6 planes has at most 9 vertices; the splits below never hold more. */
#define CLIP_MAX 12

typedef struct clip_vert {
  double p[3]; /* grid coordinates */
  double b[2]; /* barycentric weights of corners 1 and 2 (corner 0: 1 - b[0] - b[1]) */
} clip_vert;

typedef struct clip_poly {
  int n;
  clip_vert v[CLIP_MAX];
} clip_poly;

/* Splits P at the plane p[axis] = c into lo (p[axis] <= c) and hi (p[axis] >= c). */
VX_HD void clip_split(const clip_poly *P, int axis, double c, clip_poly *lo,
                              clip_poly *hi) {
  lo->n = hi->n = 0;
  for (int i = 0; i < P->n; i++) {
    const clip_vert *a = &P->v[i], *b = &P->v[i + 1 == P->n ? 0 : i + 1];
    double da = a->p[axis] - c, db = b->p[axis] - c;
    if (da <= 0.0 && lo->n < CLIP_MAX) lo->v[lo->n++] = *a;
    if (da >= 0.0 && hi->n < CLIP_MAX) hi->v[hi->n++] = *a;
    if ((da < 0.0 && db > 0.0) || (da > 0.0 && db < 0.0)) {
      double t = da / (da - db);
      clip_vert q;
      for (int k = 0; k < 3; k++) q.p[k] = a->p[k] + t * (b->p[k] - a->p[k]);
      for (int k = 0; k < 2; k++) q.b[k] = a->b[k] + t * (b->b[k] - a->b[k]);
      q.p[axis] = c;
      if (lo->n < CLIP_MAX) lo->v[lo->n++] = q;
      if (hi->n < CLIP_MAX) hi->v[hi->n++] = q;
    }
  }
}

/* The first and last slab index of P along axis, within [0, R - 1]. */
VX_HD void clip_range(const clip_poly *P, int axis, uint32_t R, int64_t *first,
                              int64_t *last) {
  double mn = P->v[0].p[axis], mx = mn;
  for (int i = 1; i < P->n; i++) {
    double x = P->v[i].p[axis];
    mn = x < mn ? x : mn;
    mx = x > mx ? x : mx;
  }
  double f = floor(mn), l = ceil(mx) - 1.0;
  if (l < f) l = f; /* mx == mn, an integer: the slab above the plane */
  if (f < 0.0) f = 0.0;
  if (f > (double)R - 1.0) f = (double)R - 1.0;
  if (l < f) l = f;
  if (l > (double)R - 1.0) l = (double)R - 1.0;
  *first = (int64_t)f;
  *last = (int64_t)l;
}

/* Area of a planar polygon in 3D (grid units squared). */
VX_HD double clip_area(const clip_poly *P) {
  double s[3] = {0.0, 0.0, 0.0};
  for (int i = 1; i + 1 < P->n; i++) {
    double u[3], w[3];
    for (int k = 0; k < 3; k++) {
      u[k] = P->v[i].p[k] - P->v[0].p[k];
      w[k] = P->v[i + 1].p[k] - P->v[0].p[k];
    }
    s[0] += u[1] * w[2] - u[2] * w[1];
    s[1] += u[2] * w[0] - u[0] * w[2];
    s[2] += u[0] * w[1] - u[1] * w[0];
  }
  return 0.5 * sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
}

/* The axis (0, 1, 2) of an inner grid plane the triangle g (9 doubles) lies on, or -1. */
VX_HD int clip_on_plane(const double g[9], uint32_t R) {
  for (int a = 0; a < 3; a++) {
    double c = g[a];
    if (g[3 + a] == c && g[6 + a] == c && c == floor(c) && c > 0.0 && c < (double)R) return a;
  }
  return -1;
}

/* Triangle g (9 doubles, grid coordinates) as a polygon, its vertices carrying their
 * barycentric weights. */
VX_HD void clip_tri_poly(const double g[9], clip_poly *P) {
  P->n = 3;
  for (int v = 0; v < 3; v++) {
    for (int k = 0; k < 3; k++) P->v[v].p[k] = g[v * 3 + k];
    P->v[v].b[0] = v == 1 ? 1.0 : 0.0;
    P->v[v].b[1] = v == 2 ? 1.0 : 0.0;
  }
}

/* The first and last slab (x) of triangle g (9 doubles, grid coordinates) that clip_triangle
 * walks. */
VX_HD void clip_x_range(const double g[9], uint32_t R, int64_t *first, int64_t *last) {
  clip_poly P;
  clip_tri_poly(g, &P);
  clip_range(&P, 0, R, first, last);
}

typedef void (*clip_emit_fn)(void *ctx, const clip_poly *P, double area, uint32_t x, uint32_t y,
                             uint32_t z);

/* Cells one after the other along an axis: the piece of P in each cell from the first to the
 * last that P reaches, each split off the rest (no copies of polygons but the first). */
typedef struct clip_chain {
  clip_poly r[2];        /* the rest beyond the current cell, alternating */
  const clip_poly *rest;
  int cur, axis;
  int64_t next, last;    /* the next cell's index, the last cell's */
} clip_chain;

VX_HD void clip_chain_init(clip_chain *c, const clip_poly *P, int axis, uint32_t R) {
  c->axis = axis;
  c->cur = 0;
  clip_range(P, axis, R, &c->next, &c->last);
  c->rest = P;
  if (c->next < c->last) {
    c->r[0] = *P;
    c->rest = &c->r[0];
  }
}

/* The next cell's piece in *piece (buf or the rest: valid until the next call) and its index in
 * *at; 0 when no cell is left or the rest is empty. */
VX_HD int clip_chain_next(clip_chain *c, clip_poly *buf, const clip_poly **piece, int64_t *at) {
  if (c->next > c->last || c->rest->n < 3) return 0;
  *at = c->next;
  if (c->next < c->last) {
    clip_split(&c->r[c->cur], c->axis, (double)(c->next + 1), buf, &c->r[1 - c->cur]);
    c->cur = 1 - c->cur;
    c->rest = &c->r[c->cur];
    *piece = buf;
  } else {
    *piece = c->rest;
  }
  c->next++;
  return 1;
}

/* The parts of PY, the piece of a triangle in slab x and row y, voxel by voxel along z, of the
 * voxels zlo <= z <= zhi: emit(ctx, P, area, x, y, z) for each of positive area above min_area
 * (round-off slivers of edges on a grid plane are skipped). Returns their number (emit may be
 * NULL: counted only). */
VX_HD uint64_t clip_row(const clip_poly *PY, uint32_t R, double min_area, int64_t x, int64_t y,
                        int64_t zlo, int64_t zhi, clip_emit_fn emit, void *ctx) {
  clip_chain cz;
  clip_poly pz;
  const clip_poly *PZ;
  int64_t z;
  uint64_t parts = 0;
  clip_chain_init(&cz, PY, 2, R);
  while (cz.next <= zhi && clip_chain_next(&cz, &pz, &PZ, &z)) {
    if (PZ->n < 3 || z < zlo) continue;
    double a = clip_area(PZ);
    if (!(a > min_area)) continue;
    if (emit) emit(ctx, PZ, a, (uint32_t)x, (uint32_t)y, (uint32_t)z);
    parts++;
  }
  return parts;
}

/* Calls emit(ctx, P, area, x, y, z) for each part of triangle g (9 doubles, grid coordinates) of
 * positive area, in x, then y, then z order; the area is that of P (3D). Parts whose area is
 * below min_area (round-off slivers of edges on a grid plane) are skipped. Only the parts of
 * voxels lo[a] <= coordinate a <= hi[a] on each axis are made, with the same bits as those of
 * the whole walk (what lies before the box is split off as the whole walk splits it), so that
 * slabs or blocks can be handed to separate threads. Returns the number of parts emitted (emit
 * may be NULL: counted only). */
VX_HD uint64_t clip_triangle_box(const double g[9], uint32_t R, double min_area,
                                 const int64_t lo[3], const int64_t hi[3], clip_emit_fn emit,
                                 void *ctx) {
  clip_poly tri, px, py;
  clip_chain cx, cy;
  const clip_poly *PX, *PY;
  int64_t x, y;
  uint64_t parts = 0;
  clip_tri_poly(g, &tri);
  clip_chain_init(&cx, &tri, 0, R);
  while (cx.next <= hi[0] && clip_chain_next(&cx, &px, &PX, &x)) {
    if (PX->n < 3 || x < lo[0]) continue;
    clip_chain_init(&cy, PX, 1, R);
    while (cy.next <= hi[1] && clip_chain_next(&cy, &py, &PY, &y))
      if (PY->n >= 3 && y >= lo[1])
        parts += clip_row(PY, R, min_area, x, y, lo[2], hi[2], emit, ctx);
  }
  return parts;
}

/* clip_triangle_box over the whole grid (only_x < 0) or over slab x = only_x. */
VX_HD uint64_t clip_triangle(const double g[9], uint32_t R, double min_area, int64_t only_x,
                             clip_emit_fn emit, void *ctx) {
  int64_t lo[3] = {0, 0, 0}, hi[3] = {INT64_MAX, INT64_MAX, INT64_MAX};
  if (only_x >= 0) lo[0] = hi[0] = only_x;
  return clip_triangle_box(g, R, min_area, lo, hi, emit, ctx);
}

#endif
