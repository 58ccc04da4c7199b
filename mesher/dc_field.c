/* SPDX-License-Identifier: Apache-2.0 */
/* dc_field.c - the single-valued corner field: one value per grid point, and signs that make
 * the mesh close.
 *
 * Why values differ. Each surface voxel stores its 8 corner values, so a grid point shared by k
 * voxels is stored k times. The voxelizer computes each distinct corner once and writes the same
 * value into every voxel that has it, with one exception: the thin-feature rule (FIELD.md,
 * voxelizer/field.c) re-signs a voxel whose corners are all outside (a part thinner than a voxel,
 * an open sheet) by the side of its nearest triangle's plane, in that voxel only, so that the
 * ray marcher sees the feature. Such a voxel holds -|d| where its neighbours hold +|d|.
 *
 * Rule 1, shared corners: the largest stored value wins ("outside wins"). The thin rule only
 * ever turns an outside value negative and keeps its magnitude, so the largest value at a point
 * is the distance field's own, and a re-signed corner keeps its sign only where every voxel that
 * stores it was re-signed. A dual-contoured mesh needs one sign per grid point: a sign that
 * differs across a shared corner is a crack, because the cells around one grid edge would
 * disagree on whether the surface crosses it. With one value per point every grid edge has one
 * crossing and one sign pair for all the cells that share it.
 *
 * Rule 1b, re-signed voxels as a whole: a voxel that stores less than the largest value at one of
 * its corners was re-signed, so it was all outside before and every negative corner of it is the
 * thin rule's; a voxel storing a negative value where such a voxel had a positive one was
 * re-signed too. The closure of these is flagged, their corners count by magnitude in rule 1, and
 * the points of their corners are recomputed. Left half-undone, a thin part would keep negative
 * corners next to restored positive ones across empty space: a crack.
 *
 * Rule 2, signs next to empty space. Dual contouring puts a quad on every grid edge whose ends
 * differ in sign, between the four cells around it, so all four must be in the tree. With the
 * signs of a closed surface they are: the surface crosses the edge, so it meets the closed box of
 * each of the four voxels, and the voxelizer keeps every voxel a triangle meets. Two kinds of
 * corner break this. (a) A quantized zero (|d| < band / 254, about 0.008 voxel) has no sign;
 * when the surface passes that close on the other side of the point, calling it outside puts a
 * sign change next to an empty voxel (a mesh face lying on a grid plane gives whole planes of
 * zeros). (b) A corner that rule 1 left re-signed, next to empty space. So a point whose sign
 * differs from that of every known neighbour across an edge that borders an empty voxel takes
 * their sign (keeping its magnitude; a zero becomes -1 or stays 0), and a zero that no such
 * neighbour decides takes the sign opposite to most of the other corners of its voxels (the
 * surface lies between the point and them). The signs of a closed surface never trigger it.
 * Consequences: parts thinner than a voxel, which the field holds only through re-signed
 * voxels, thin out or vanish from the mesh where they border ordinary voxels (at this resolution
 * they cannot be closed surfaces); isolated re-signed sheets stay open sheets.
 *
 * The walk (dc_walk.c, FIELD pass) visits every grid point once with the voxels around it,
 * reading the tree's own voxels and writing the result, so points never race; it also flags the
 * voxels rule 1b starts from. The closure, the recomputed points and what follows run on one
 * thread over the few points concerned (in Morton order of the voxels flagged, whatever order the
 * walk's threads flagged them in), finding voxels by descending the tree. Rule 2 at one
 * point reads its neighbours' values as stored, so a point it re-signed can change what rule 2
 * says at a neighbour: those neighbours are looked at again, one by one (in a fixed order, each
 * seeing the values written so far), until nothing changes.
 */
#include "mesher/dc_internal.h"
#include "sys/system.h"
#include <stdlib.h>

int8_t dc_point_value(const vx_voxel *const vox[8], int8_t *canon, int *disputed) {
  /* Rule 1. */
  int8_t hi = -128, lo = 127;
  uint32_t present = 0;
  for (int i = 0; i < 8; i++) {
    if (!vox[i]) continue;
    present |= 1u << i;
    int8_t q = vox[i]->c[i ^ 7];
    if (q > hi) hi = q;
    if (q < lo) lo = q;
  }
  *canon = hi;
  *disputed = hi != lo;
  int8_t g = hi;
  if (present == 0xffu && g != 0) return g; /* no empty voxel around, a sign: nothing to do */
  /* Rule 2: the known neighbours across edges that border an empty voxel. The four octants on
   * side d of the point along axis k are those with bit k == d. */
  static const uint8_t side_mask[3][2] = {{0x55, 0xaa}, {0x33, 0xcc}, {0x0f, 0xf0}};
  int pos = 0, neg = 0;
  for (int k = 0; k < 3; k++)
    for (int d = 0; d < 2; d++) {
      uint32_t m = side_mask[k][d], have = present & m;
      if (have == m || have == 0) continue;
      int8_t h = -128;
      for (int i = 0; i < 8; i++) {
        if (!(have >> i & 1u)) continue;
        int8_t q = vox[i]->c[(i ^ 7) ^ (1 << k)];
        if (q > h) h = q;
      }
      pos += h > 0;
      neg += h < 0;
    }
  int want = 0; /* -1: negative, +1: positive, 0: as it is */
  if (neg > 0 && pos == 0) want = -1;
  else if (pos > 0 && neg == 0) want = 1;
  else if (g == 0 && pos == 0 && neg == 0) {
    int p2 = 0, n2 = 0;
    for (int i = 0; i < 8; i++) {
      if (!vox[i]) continue;
      for (int c = 0; c < 8; c++) {
        p2 += vox[i]->c[c] > 0;
        n2 += vox[i]->c[c] < 0;
      }
    }
    want = p2 > n2 ? -1 : 0;
  }
  if (want < 0 && g >= 0) return (int8_t)(g == 0 ? -1 : -g);
  if (want > 0 && g < 0) return (int8_t)-g;
  return g;
}

/* The voxel with minimum corner (x, y, z), DC_NONE when the tree has none there. */
static uint32_t voxel_at(const vx_octree *t, int64_t x, int64_t y, int64_t z) {
  const uint32_t D = t->depth;
  const int64_t R = (int64_t)1 << D;
  if (x < 0 || y < 0 || z < 0 || x >= R || y >= R || z >= R || !t->node_count) return DC_NONE;
  uint32_t idx = 0;
  for (uint32_t l = 0; l < D; l++) {
    uint32_t sh = D - 1 - l;
    uint32_t s = (uint32_t)((x >> sh & 1) | (y >> sh & 1) << 1 | (z >> sh & 1) << 2);
    const vx_node *n = &t->nodes[idx];
    uint32_t mask = vx_node_mask(n->info);
    if (!(mask >> s & 1u)) return DC_NONE;
    idx = vx_child_index(n->child, mask, s);
  }
  return idx;
}

/* Rule 2 again at grid point g from the values in out; 1 when its sign changed. */
static int revisit(const vx_octree *t, vx_voxel *out, const int64_t g[3]) {
  const vx_voxel *vox[8];
  uint32_t idx[8];
  int any = 0;
  for (int i = 0; i < 8; i++) {
    idx[i] = voxel_at(t, g[0] - 1 + (i & 1), g[1] - 1 + (i >> 1 & 1), g[2] - 1 + (i >> 2 & 1));
    vox[i] = idx[i] == DC_NONE ? NULL : &out[idx[i]];
    any |= vox[i] != NULL;
  }
  if (!any) return 0;
  int8_t canon;
  int disputed;
  int8_t to = dc_point_value(vox, &canon, &disputed);
  if ((to < 0) == (canon < 0)) return 0;
  for (int i = 0; i < 8; i++)
    if (vox[i]) out[idx[i]].c[i ^ 7] = to;
  return 1;
}

static int cmp_code(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Rule 1 again at grid point g from the stored values, re-signed voxels counted by their
 * magnitude, and rule 2 from the values in out. Writes the result; 1 when its sign changed. */
static int restore_point(const vx_octree *t, const _Atomic uint8_t *resigned, vx_voxel *out,
                         const int64_t g[3]) {
  vx_voxel copy[8];
  const vx_voxel *vox[8];
  uint32_t idx[8];
  int8_t before = 0;
  int any = 0;
  for (int i = 0; i < 8; i++) {
    idx[i] = voxel_at(t, g[0] - 1 + (i & 1), g[1] - 1 + (i >> 1 & 1), g[2] - 1 + (i >> 2 & 1));
    vox[i] = NULL;
    if (idx[i] == DC_NONE) continue;
    copy[i] = out[idx[i]];
    before = copy[i].c[i ^ 7];
    int8_t q = t->voxels[idx[i]].c[i ^ 7];
    copy[i].c[i ^ 7] = atomic_load(&resigned[idx[i]]) && q < 0 ? (int8_t)-q : q;
    vox[i] = &copy[i];
    any = 1;
  }
  if (!any) return 0;
  int8_t canon;
  int disputed;
  int8_t to = dc_point_value(vox, &canon, &disputed);
  for (int i = 0; i < 8; i++)
    if (vox[i]) out[idx[i]].c[i ^ 7] = to;
  return (to < 0) != (before < 0);
}

/* Is grid point `code` (Morton) the part's own (every point when the tree is whole)? */
static int point_owned(const dc_tree *T, uint64_t code) {
  uint32_t p[3];
  vx_morton_decode(code, &p[0], &p[1], &p[2]);
  return dc_part_owns(T, p, 0);
}

vx_status dc_field(const dc_tree *T0, int threads, vx_voxel *out, uint64_t *shared,
                   uint64_t *disputed, uint64_t *repaired, vx_progress_fn progress, void *user,
                   vx_error *err) {
  const vx_octree *t = T0->t;
  *shared = *disputed = *repaired = 0;
  dc_tree T = *T0;
  T.resigned = (_Atomic uint8_t *)vx_calloc((size_t)(t->voxel_count ? t->voxel_count : 1), 1);
  if (!T.resigned) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the corner field");
  dc_out sum;
  dc_vec list;
  if (t->voxel_count) memcpy(out, t->voxels, t->voxel_count * sizeof(vx_voxel));
  vx_status st = dc_walk(&T, DC_PASS_FIELD, threads, out, &list, &sum, progress, user,
                         "meshing: corner field", err);
  if (st != VX_OK) {
    vx_free((void *)T.resigned);
    return st;
  }
  *shared = sum.shared;
  *disputed = sum.disputed;
  /* Re-signed voxels: one found by a lower value at one corner was all outside before the thin
   * rule, so every negative corner of it is the thin rule's; a voxel that stores a negative
   * value where such a voxel had a positive one was re-signed too. Flag them all (a closure:
   * the order does not matter), then recompute the points of their corners. */
  dc_vec *marks = &sum.marks;
  /* The walk's threads found them in any order; the points restored below read what the points
   * before them wrote, so they go in a fixed one: the same field for any thread count. */
  if (marks->n) qsort(marks->data, marks->n, sizeof(dc_mark), cmp_code);
  for (uint64_t k = 0; st == VX_OK && k < marks->n; k++) {
    dc_mark m = ((const dc_mark *)marks->data)[k];
    uint32_t x, y, z;
    vx_morton_decode(m.code, &x, &y, &z);
    for (int c = 0; c < 8 && st == VX_OK; c++) {
      if (t->voxels[m.idx].c[c] >= 0) continue;
      int64_t g[3] = {(int64_t)x + (c & 1), (int64_t)y + (c >> 1 & 1), (int64_t)z + (c >> 2 & 1)};
      for (int i = 0; i < 8; i++) {
        int64_t o[3] = {g[0] - 1 + (i & 1), g[1] - 1 + (i >> 1 & 1), g[2] - 1 + (i >> 2 & 1)};
        uint32_t w = voxel_at(t, o[0], o[1], o[2]);
        if (w == DC_NONE || atomic_load(&T.resigned[w]) || t->voxels[w].c[i ^ 7] >= 0) continue;
        atomic_store(&T.resigned[w], 1);
        dc_mark *d = (dc_mark *)dc_vec_push(marks);
        if (!d) {
          st = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the corner field");
          break;
        }
        d->code = vx_morton_encode((uint32_t)o[0], (uint32_t)o[1], (uint32_t)o[2]);
        d->idx = w;
        d->pad = 0;
      }
    }
  }
  for (uint64_t k = 0; st == VX_OK && k < marks->n; k++) {
    dc_mark m = ((const dc_mark *)marks->data)[k];
    uint32_t x, y, z;
    vx_morton_decode(m.code, &x, &y, &z);
    for (int c = 0; c < 8; c++) {
      int64_t g[3] = {(int64_t)x + (c & 1), (int64_t)y + (c >> 1 & 1), (int64_t)z + (c >> 2 & 1)};
      if (!restore_point(t, T.resigned, out, g)) continue;
      uint64_t *q = (uint64_t *)dc_vec_push(&list);
      if (!q) {
        st = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the corner field");
        break;
      }
      *q = vx_morton_encode((uint32_t)g[0], (uint32_t)g[1], (uint32_t)g[2]);
    }
  }
  dc_vec_free(marks);
  vx_free((void *)T.resigned);
  if (st != VX_OK) {
    dc_vec_free(&list);
    return st;
  }
  /* A fixed order for what follows: sorted, without repeats. */
  uint64_t *codes = (uint64_t *)list.data, n = 0;
  if (list.n) qsort(codes, list.n, sizeof *codes, cmp_code);
  for (uint64_t k = 0; k < list.n; k++)
    if (n == 0 || codes[n - 1] != codes[k]) codes[n++] = codes[k];
  list.n = n;
  for (uint64_t k = 0; k < n; k++) *repaired += point_owned(&T, codes[k]);
  /* The neighbours of re-signed points, first in, first out; each change queues its own. The
   * sign of a point only moves towards agreeing with its neighbours, so this ends quickly; the
   * cap only guards against a field that keeps flipping. */
  uint64_t cap = 64 * list.n + 4096, steps = 0;
  for (uint64_t k = 0; k < list.n && steps < cap; k++) {
    uint32_t p[3];
    vx_morton_decode(((const uint64_t *)list.data)[k], &p[0], &p[1], &p[2]);
    for (int a = 0; a < 3; a++)
      for (int d = -1; d <= 1; d += 2) {
        int64_t h[3] = {p[0], p[1], p[2]};
        h[a] += d;
        if (h[a] < 0 || h[a] > ((int64_t)1 << t->depth)) continue;
        steps++;
        if (!revisit(t, out, h)) continue;
        uint64_t *q = (uint64_t *)dc_vec_push(&list);
        if (!q) {
          dc_vec_free(&list);
          return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the corner field");
        }
        *q = vx_morton_encode((uint32_t)h[0], (uint32_t)h[1], (uint32_t)h[2]);
        *repaired += point_owned(&T, *q);
      }
  }
  dc_vec_free(&list);
  return VX_OK;
}

vx_status vx_dc_corner_field(const vx_octree *t, int threads, vx_voxel *out, uint64_t *shared,
                             uint64_t *disputed, vx_error *err) {
  if (shared) *shared = 0;
  if (disputed) *disputed = 0;
  if (!t || !out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree or no output");
  if (t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH || t->levels_loaded != t->depth + 1 ||
      (!t->voxels && t->voxel_count))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "the corner field needs every level of the tree loaded (%u of %u)",
                        t->levels_loaded, t->depth + 1);
  dc_tree T;
  memset(&T, 0, sizeof T);
  T.t = t;
  T.D = t->depth;
  T.node_count = t->node_count;
  T.cut = VX_DC_FINEST;
  T.level = t->depth;
  uint64_t sh, di, re;
  vx_status st = dc_field(&T, vx_thread_count(threads, 256), out, &sh, &di, &re, NULL, NULL, err);
  if (st == VX_OK) {
    if (shared) *shared = sh;
    if (disputed) *disputed = di + re;
  }
  return st;
}
