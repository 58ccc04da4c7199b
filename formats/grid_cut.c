/* SPDX-License-Identifier: Apache-2.0 */
/* grid_cut.c - a tree's field at one level as cells, grid points and solid runs (grid_cut.h).
 *
 * The cut is one depth-first walk in slot order, so cells come out in Morton order without a sort.
 * A pruned leaf above the cut level is subdivided top-down: a box can hold a zero of the plane
 * f(p) = n.p + e only when |f(centre)| <= (|n_x| + |n_y| + |n_z|) * size / 2, the largest change
 * of a linear function from the centre to a corner, so only boxes the plane crosses are visited
 * and the work is proportional to the cells emitted.
 * The grid points are made block by block (grid_points.c).
 */
#include "formats/grid_cut.h"
#include "svo/lod_eval.h"
#include "sys/system.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CELL_BYTES (sizeof(uint64_t) + 8 * sizeof(float))

/* What the limit leaves beside the process as it is now. */
static uint64_t limit_room(uint64_t limit) {
  uint64_t rss = vx_resident_bytes();
  return limit > rss ? limit - rss : 0;
}

void vx_cut_free(vx_cut *c) {
  if (!c) return;
  vx_free(c->codes);
  vx_free(c->field);
  vx_free(c->rgba);
  memset(c, 0, sizeof *c);
}

typedef struct walk {
  const vx_octree *t;  /* the part walked: its root is the cell the walk starts from */
  uint32_t D, L;       /* the whole tree's depth, the cut's level */
  double S;            /* a cut cell in finest voxels: 2^(D-L) */
  vx_cut *c;
  uint64_t max_cells;  /* from the memory limit */
  uint64_t limit;
  vx_progress_fn progress;
  void *user;
  uint64_t done, total, next_report;
  vx_error *err;
  int colored;         /* the tree has node and voxel colours: cells carry theirs */
} walk;

static vx_status push_cell(walk *w, uint32_t x, uint32_t y, uint32_t z, const float v[8],
                           int from_plane, uint32_t rgba) {
  vx_cut *c = w->c;
  if (c->count == c->cap) {
    if (c->fixed)
      return vx_error_set(w->err, VX_ERR_CORRUPT, "the level-%u field has more than the %llu "
                          "cells its headers count", w->L, (unsigned long long)c->cap);
    if (c->count >= w->max_cells) {
      char lim[32];
      return vx_error_set(w->err, VX_ERR_LIMIT,
                          "the level-%u field has more than %llu cells: beyond the memory limit "
                          "(%s)", w->L, (unsigned long long)c->count,
                          vx_bytes_text((double)w->limit, lim, sizeof lim));
    }
    uint64_t cap = c->cap ? c->cap * 2 : 4096;
    if (cap > w->max_cells) cap = w->max_cells;
    uint64_t *codes = (uint64_t *)vx_realloc(c->codes, (size_t)cap * sizeof *codes);
    if (!codes) return vx_error_set(w->err, VX_ERR_NOMEM, "out of memory for %llu cells",
                                    (unsigned long long)cap);
    c->codes = codes;
    float(*field)[8] = (float(*)[8])vx_realloc(c->field, (size_t)cap * sizeof *field);
    if (!field) return vx_error_set(w->err, VX_ERR_NOMEM, "out of memory for %llu cells",
                                    (unsigned long long)cap);
    c->field = field;
    if (w->colored) {
      uint32_t *col = (uint32_t *)vx_realloc(c->rgba, (size_t)cap * sizeof *col);
      if (!col) return vx_error_set(w->err, VX_ERR_NOMEM, "out of memory for %llu cells",
                                    (unsigned long long)cap);
      c->rgba = col;
    }
    c->cap = cap;
  }
  if (w->colored) c->rgba[c->count] = rgba;
  c->codes[c->count] = vx_morton_encode(x, y, z);
  memcpy(c->field[c->count], v, sizeof(float) * 8);
  c->count++;
  c->plane_cells += (uint64_t)from_plane;
  return VX_OK;
}

/* The level-L cell (x, y, z) from plane P, whose frame origin is node_min (finest voxels). */
static vx_status plane_cell(walk *w, const vx_plane *P, const double node_min[3], uint32_t x,
                            uint32_t y, uint32_t z, uint32_t rgba) {
  float v[8];
  double p0[3] = {x * w->S - node_min[0], y * w->S - node_min[1], z * w->S - node_min[2]};
  for (int k = 0; k < 8; k++)
    v[k] = (float)(vx_plane_at(P, p0[0] + (k & 1) * w->S, p0[1] + (k >> 1 & 1) * w->S,
                               p0[2] + (k >> 2 & 1) * w->S) / w->S);
  return push_cell(w, x, y, z, v, 1, rgba);
}

/* The level-L cells below box (x, y, z) of level m that plane P crosses, in Morton order. */
static vx_status subdivide(walk *w, const vx_plane *P, const double node_min[3], uint32_t m,
                           uint32_t x, uint32_t y, uint32_t z, uint32_t rgba) {
  double size = ldexp(1.0, (int)(w->D - m));
  double h = 0.5 * size;
  double f = vx_plane_at(P, x * size + h - node_min[0], y * size + h - node_min[1],
                         z * size + h - node_min[2]);
  double r = (fabs(P->n[0]) + fabs(P->n[1]) + fabs(P->n[2])) * h;
  if (!(f - r <= 0.0 && f + r >= 0.0)) return VX_OK;
  if (m == w->L) return plane_cell(w, P, node_min, x, y, z, rgba);
  for (uint32_t s = 0; s < 8; s++) {
    vx_status st = subdivide(w, P, node_min, m + 1, 2 * x + (s & 1), 2 * y + (s >> 1 & 1),
                             2 * z + (s >> 2 & 1), rgba);
    if (st != VX_OK) return st;
  }
  return VX_OK;
}

static vx_status report(walk *w) {
  if (!w->progress || ++w->done < w->next_report) return VX_OK;
  w->next_report = w->done + w->total / 64 + 1;
  if (w->progress(w->user, "field", w->total ? (double)w->done / (double)w->total : 1.0))
    return vx_error_set(w->err, VX_ERR_INTERRUPTED, "interrupted");
  return VX_OK;
}

/* Node `idx` at level l with cell coordinates (x, y, z): its part of the cut. */
static vx_status visit(walk *w, uint64_t idx, uint32_t l, uint32_t x, uint32_t y, uint32_t z) {
  const vx_octree *t = w->t;
  const vx_node *nd = &t->nodes[idx];
  uint32_t mask = vx_node_mask(nd->info);
  double size = ldexp(1.0, (int)(w->D - l));
  double node_min[3] = {x * size, y * size, z * size};
  if (l == w->L || mask == 0) {
    vx_plane P;
    vx_plane_decode(nd, size, &P);
    uint32_t rgba = w->colored ? t->node_color[idx] : 0;
    vx_status st = l == w->L ? plane_cell(w, &P, node_min, x, y, z, rgba)
                             : subdivide(w, &P, node_min, l, x, y, z, rgba);
    if (st == VX_OK && l == w->L) st = report(w);
    return st;
  }
  for (uint32_t s = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    uint32_t ci = vx_child_index(nd->child, mask, s);
    uint32_t cx = 2 * x + (s & 1), cy = 2 * y + (s >> 1 & 1), cz = 2 * z + (s >> 2 & 1);
    vx_status st;
    if (l + 1 < w->D) {
      st = visit(w, ci, l + 1, cx, cy, cz);
    } else {
      const vx_voxel *v = &t->voxels[ci];
      float f[8];
      for (int k = 0; k < 8; k++) f[k] = vx_corner_value(v->c[k], t->band);
      st = push_cell(w, cx, cy, cz, f, 0, w->colored ? t->voxel_color[ci] : 0);
      if (st == VX_OK) st = report(w);
    }
    if (st != VX_OK) return st;
  }
  return VX_OK;
}

void vx_cut_begin(uint32_t depth, uint32_t level, const vx_transform *xf, vx_cut *out) {
  memset(out, 0, sizeof *out);
  out->depth = depth;
  out->level = level;
  out->res = 1u << level;
  out->h = xf->scale * ldexp(1.0, (int)(depth - level));
  for (int k = 0; k < 3; k++) out->origin[k] = xf->origin[k];
}

vx_status vx_cut_add(vx_cut *c, const vx_octree *part, uint32_t root_level, const uint32_t root[3],
                     uint64_t mem_limit, vx_progress_fn progress, void *user, vx_error *err) {
  const uint32_t L = c->level;
  if (!part || !part->nodes || root_level > L || part->depth + root_level != c->depth ||
      part->levels_loaded <= L - root_level)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "the part does not hold level %u (levels %u of "
                        "%u loaded)", L, part ? part->levels_loaded : 0, part ? part->depth + 1 : 0);
  walk w;
  memset(&w, 0, sizeof w);
  w.t = part;
  w.D = c->depth;
  w.L = L;
  w.S = ldexp(1.0, (int)(c->depth - L));
  w.c = c;
  w.limit = mem_limit ? mem_limit : vx_default_mem_limit();
  w.colored = part->node_color && (part->voxel_color || part->voxel_count == 0);
  if (c->count && w.colored != (c->rgba != NULL))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "parts of one cut differ in colour");
  /* what the limit leaves beside the process (the cells so far are in it) */
  w.max_cells = c->cap + limit_room(w.limit) / (CELL_BYTES + (w.colored ? sizeof(uint32_t) : 0));
  w.progress = progress;
  w.user = user;
  w.total = part->level_count[L - root_level];
  w.err = err;
  return visit(&w, 0, root_level, root[0], root[1], root[2]);
}

vx_status vx_cut_build(const vx_octree *t, uint32_t level, uint64_t mem_limit,
                       vx_progress_fn progress, void *user, vx_cut *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (!t || !t->nodes || t->levels_loaded != t->depth + 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "the tree is not whole (levels %u of %u loaded)",
                        t ? t->levels_loaded : 0, t ? t->depth + 1 : 0);
  if (level > t->depth)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "level %u is beyond the tree's depth %u (levels "
                        "0..%u)", level, t->depth, t->depth);
  vx_cut_begin(t->depth, level, &t->xf, out);
  const uint32_t root[3] = {0, 0, 0};
  vx_status s = vx_cut_add(out, t, 0, root, mem_limit, progress, user, err);
  if (s == VX_OK) s = vx_cut_end(out, err);
  if (s != VX_OK) vx_cut_free(out);
  return s;
}

vx_status vx_cut_end(vx_cut *c, vx_error *err) {
  if (c->count == 0)
    return vx_error_set(err, VX_ERR_EMPTY, "the level-%u field has no surface cells", c->level);
  return VX_OK;
}

/* ---- searches ------------------------------------------------------------------------------- */

/* The index of the first a[i] >= key in sorted a[0..n), searched outward from *hint, which it
 * becomes. */
uint64_t vx_gallop(const uint64_t *a, uint64_t n, uint64_t key, uint64_t *hint) {
  uint64_t lo, hi, h = *hint < n ? *hint : n ? n - 1 : 0;
  if (n == 0) return 0;
  if (a[h] < key) { /* forward: a[lo - 1] < key */
    uint64_t step = 1;
    lo = h + 1;
    while (lo + step - 1 < n && a[lo + step - 1] < key) {
      lo += step;
      step *= 2;
    }
    hi = lo + step - 1 < n ? lo + step - 1 : n;
  } else { /* backward: a[hi] >= key */
    uint64_t step = 1;
    hi = h;
    while (hi >= step && a[hi - step] >= key) {
      hi -= step;
      step *= 2;
    }
    lo = hi >= step ? hi - step + 1 : 0;
  }
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  *hint = lo;
  return lo;
}

/* ---- solid runs --------------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* bit 0: the cell's lower y face (corners 0, 1, 4, 5) is inside; bit 1: its upper face (2, 3, 6, 7) */
static uint64_t face_flags(const float f[8]) {
  double lo = (double)f[0] + f[1] + f[4] + f[5], hi = (double)f[2] + f[3] + f[6] + f[7];
  return (uint64_t)(lo < 0.0) | (uint64_t)(hi < 0.0) << 1;
}

vx_status vx_cut_runs(const vx_cut *c, int solid, uint64_t mem_limit, vx_run_fn fn, void *user,
                      vx_error *err) {
  uint64_t limit = mem_limit ? mem_limit : vx_default_mem_limit();
  if (c->count > limit_room(limit) / sizeof(uint64_t)) {
    char lim[32];
    return vx_error_set(err, VX_ERR_LIMIT, "%llu cells do not fit the memory limit (%s)",
                        (unsigned long long)c->count, vx_bytes_text((double)limit, lim, sizeof lim));
  }
  /* (x, z, y) order: x << 28 | z << 14 | y (14 bits each: levels <= 14), then two face flags */
  uint64_t *k = (uint64_t *)vx_malloc((size_t)(c->count ? c->count : 1) * sizeof *k);
  if (!k) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu cells",
                              (unsigned long long)c->count);
  for (uint64_t i = 0; i < c->count; i++) {
    uint32_t x, y, z;
    vx_morton_decode(c->codes[i], &x, &y, &z);
    k[i] = ((uint64_t)x << 28 | (uint64_t)z << 14 | y) << 2 | face_flags(c->field[i]);
  }
  qsort(k, (size_t)c->count, sizeof *k, cmp_u64);
  vx_status s = VX_OK;
  uint64_t i = 0;
  while (i < c->count && s == VX_OK) {
    uint64_t col = k[i] >> 16; /* x, z */
    uint32_t y0 = (uint32_t)(k[i] >> 2 & 0x3fff), y1 = y0 + 1;
    uint64_t prev = k[i];
    for (i++; i < c->count && (k[i] >> 16) == col; i++) {
      uint32_t y = (uint32_t)(k[i] >> 2 & 0x3fff);
      int joined = y == y1 || (solid && (prev & 2) && (k[i] & 1));
      if (!joined) {
        s = fn(user, (uint32_t)(col >> 14), (uint32_t)(col & 0x3fff), y0, y1, err);
        if (s != VX_OK) break;
        y0 = y;
      }
      y1 = y + 1;
      prev = k[i];
    }
    if (s == VX_OK) s = fn(user, (uint32_t)(col >> 14), (uint32_t)(col & 0x3fff), y0, y1, err);
  }
  vx_free(k);
  return s;
}

float vx_cut_sample(const vx_cut *c, uint64_t i, const double u[3], double grad[3]) {
  const float *f = c->field[i];
  double x = u[0], y = u[1], z = u[2];
  double v = 0.0;
  grad[0] = grad[1] = grad[2] = 0.0;
  for (int k = 0; k < 8; k++) {
    double wx = (k & 1) ? x : 1.0 - x, wy = (k >> 1 & 1) ? y : 1.0 - y;
    double wz = (k >> 2 & 1) ? z : 1.0 - z;
    double dx = (k & 1) ? 1.0 : -1.0, dy = (k >> 1 & 1) ? 1.0 : -1.0;
    double dz = (k >> 2 & 1) ? 1.0 : -1.0;
    v += wx * wy * wz * f[k];
    grad[0] += dx * wy * wz * f[k];
    grad[1] += wx * dy * wz * f[k];
    grad[2] += wx * wy * dz * f[k];
  }
  return (float)v;
}
