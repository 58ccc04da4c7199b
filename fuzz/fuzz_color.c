/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_color.c - libFuzzer target: colour queries (svo/color_query.h, the code behind
 * vx_tree_colors and Tree.colors) on arbitrary coloured trees at arbitrary points, against a
 * brute force over every cell written here from the rule in include/voxlod/tree.h.
 *
 * Input: a 4-byte header, up to 32 points of 12 bytes, then the tree: a .svo file, or with bit 4
 * voxel records built here (1 byte: depth 1..5; 1 byte: band 1..8 voxels; then 15 bytes per
 * voxel: x, y, z, 8 corner values, RGBA), with colours for the nodes from the bytes too, fitted
 * and with bit 5 pruned (at byte 1 / 16 voxels), so that the fuzzer shapes trees and colours.
 *   byte 0: bits 1-2 the levels to read from a file (0: all, else that many), bit 4 build, bit 5
 *           prune
 *   byte 1: the query level: 0 = -1 (finest loaded), else (byte - 1) modulo the levels loaded
 *   byte 2: the point count (modulo 33)
 *   byte 3: the spread of the points around the root box, in quarter boxes
 * Each 12-byte point is used twice: as three raw floats (NaN, infinities, huge values) and as
 * three 32-bit fractions placing a point in and around the root box. A grey tree is skipped (the
 * library refuses it before the search); so are bands over 8 voxels (the reader accepts up to
 * 10^6, where the brute force over every cell within the radius is too slow for a fuzzer). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/svo_file.h"
#include "svo/color_query.h"
#include "svo/lod.h"
#include "sys/alloc.h"
#include "fuzz_tree.h"

#define MAX_POINTS 32
#define REC 15

/* A coloured tree built from voxel records (see above); 0 when the bytes give none. */
static int build_tree(const uint8_t *data, size_t size, int prune, float prune_error,
                      vx_octree *t) {
  if (size < 2) return 0;
  const uint32_t depth = 1u + data[0] % 5u, mask = (1u << depth) - 1u;
  const float band = 1.0f + (float)(data[1] % 8u);
  data += 2;
  size -= 2;
  size_t n = size / REC;
  if (n == 0 || n > 4000) return 0;
  uint64_t *codes = (uint64_t *)malloc(n * sizeof *codes);
  vx_voxel *field = (vx_voxel *)malloc(n * sizeof *field);
  size_t *src = (size_t *)malloc(n * sizeof *src);
  size_t m = codes && field && src ? fuzz_voxels(data, n, REC, mask, codes, field, src) : 0;
  int ok = 0;
  if (m) {
    vx_error e;
    if (vx_octree_build(depth, codes, field, m, t, &e) != VX_OK) abort();
    t->band = band;
    t->xf.scale = 0.25;
    t->xf.origin[0] = -1.0;
    t->node_color = (uint32_t *)vx_malloc((size_t)t->node_count * sizeof(uint32_t));
    t->voxel_color = (uint32_t *)vx_malloc((size_t)m * sizeof(uint32_t));
    if (!t->node_color || !t->voxel_color) abort();
    for (size_t i = 0; i < m; i++) t->voxel_color[i] = le32(data + REC * src[i] + 11);
    for (uint64_t k = 0; k < t->node_count; k++) /* node colours from the bytes too */
      t->node_color[k] = le32(data + (4 * k) % (size - 3)) ^ (uint32_t)k;
    ok = vx_octree_fit_planes(t, NULL, NULL, &e) == VX_OK &&
         (!prune || vx_octree_prune(t, prune_error, &e) == VX_OK);
    if (!ok) abort();
    if (vx_octree_validate(t, &e) != VX_OK) abort();
  }
  free(codes);
  free(field);
  free(src);
  return ok;
}

/* Each loaded cell's level and coordinates, from the masks (children in slot order). */
static void cell_positions(const vx_octree *t, uint32_t *xyz, uint8_t *lvl) {
  xyz[0] = xyz[1] = xyz[2] = 0;
  lvl[0] = 0;
  uint64_t next = 1, first = 0;
  for (uint32_t l = 0; l + 1 < t->levels_loaded; l++) {
    for (uint64_t k = 0; k < t->level_count[l]; k++) {
      uint32_t m = vx_node_mask(t->nodes[first + k].info);
      for (uint32_t s = 0; s < 8; s++)
        if (m >> s & 1u) {
          xyz[3 * next] = 2 * xyz[3 * (first + k)] + (s & 1u);
          xyz[3 * next + 1] = 2 * xyz[3 * (first + k) + 1] + (s >> 1 & 1u);
          xyz[3 * next + 2] = 2 * xyz[3 * (first + k) + 2] + (s >> 2 & 1u);
          lvl[next++] = (uint8_t)(l + 1);
        }
    }
    first += t->level_count[l];
  }
}

/* The rule, by brute force: every level-L cell (a pruned leaf above L stands for its level-L
 * cells), the nearest by centre distance within the Chebyshev radius, ties to the smaller
 * Morton code. */
static uint32_t brute(const vx_octree *t, const uint32_t *xyz, const uint8_t *lvl, uint64_t cells,
                      uint32_t L, const float p[3]) {
  const double size = (double)(1u << (t->depth - L));
  const int64_t r = (int64_t)ceil((double)t->band / size);
  int64_t q[3];
  for (int a = 0; a < 3; a++) {
    double g = floor(((double)p[a] - t->xf.origin[a]) / (t->xf.scale * size));
    if (!(g >= -(double)r - 1.0 && g <= (double)(1u << L) + (double)r)) return 0;
    q[a] = (int64_t)g;
  }
  int found = 0;
  uint64_t bd = 0, bm = 0;
  uint32_t best = 0;
  for (uint64_t k = 0; k < cells; k++) {
    const uint32_t l = lvl[k];
    const int is_node = k < t->node_count;
    const int leaf = is_node && l < L && vx_node_mask(t->nodes[k].info) == 0;
    if (l != L && !leaf) continue;
    /* the cell's level-L cells within r of q on every axis (the others are out anyway) */
    const int64_t span = (int64_t)1 << (L - l);
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
      lo[a] = (int64_t)xyz[3 * k + (uint64_t)a] * span;
      hi[a] = lo[a] + span - 1;
      if (lo[a] < q[a] - r) lo[a] = q[a] - r;
      if (hi[a] > q[a] + r) hi[a] = q[a] + r;
    }
    for (int64_t z = lo[2]; z <= hi[2]; z++)
      for (int64_t y = lo[1]; y <= hi[1]; y++)
        for (int64_t x = lo[0]; x <= hi[0]; x++) {
          int64_t c[3] = {x, y, z};
          int64_t cheb = 0;
          uint64_t d2 = 0;
          for (int a = 0; a < 3; a++) {
            int64_t d = c[a] > q[a] ? c[a] - q[a] : q[a] - c[a];
            if (d > cheb) cheb = d;
            d2 += (uint64_t)(d * d);
          }
          if (cheb > r) continue;
          uint64_t m = vx_morton_encode((uint32_t)c[0], (uint32_t)c[1], (uint32_t)c[2]);
          if (!found || d2 < bd || (d2 == bd && m < bm)) {
            found = 1;
            bd = d2;
            bm = m;
            best = is_node ? t->node_color[k] : t->voxel_color[k - t->node_count];
          }
        }
  }
  return best;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  const uint8_t ctl = data[0], lsel = data[1];
  const size_t np = data[2] % (MAX_POINTS + 1);
  const double spread = (double)data[3] * 0.25;
  if (size < 4 + 12 * np) return 0;
  const uint8_t *pts = data + 4, *rest = pts + 12 * np;
  const size_t rest_n = size - 4 - 12 * np;
  vx_octree t;
  memset(&t, 0, sizeof t);
  if (ctl & 16) {
    if (!build_tree(rest, rest_n, ctl & 32, rest_n > 1 ? (float)rest[1] / 16.0f : 1.0f, &t))
      return 0;
  } else {
    vx_svo_read_opts o = {(ctl >> 1 & 3) ? (int)(ctl >> 1 & 3) - 1 : -1, (uint64_t)64 << 20, 0, 0};
    vx_error e;
    if (vx_svo_decode(rest, rest_n, &o, &t, NULL, &e) != VX_OK) return 0;
  }
  const uint64_t cells = t.node_count + t.voxel_count;
  if (!t.node_color || t.band > 8.0f || t.depth > 8 || cells > 20000) {
    vx_octree_free(&t);
    return 0;
  }
  const uint32_t levels = t.levels_loaded;
  const uint32_t L = lsel == 0 ? levels - 1 : (uint32_t)(lsel - 1) % levels;
  /* the points: raw floats, then the same bytes as fractions of (a widened) root box */
  float p[2 * MAX_POINTS * 3];
  const double box = t.xf.scale * (double)(1u << t.depth);
  for (size_t i = 0; i < np; i++)
    for (int a = 0; a < 3; a++) {
      memcpy(&p[3 * i + (size_t)a], pts + 12 * i + 4 * (size_t)a, 4);
      double f = (double)le32(pts + 12 * i + 4 * (size_t)a) / 4294967296.0;
      p[3 * (np + i) + (size_t)a] =
          (float)(t.xf.origin[a] + box * ((1.0 + 2.0 * spread) * f - spread));
    }
  const size_t n = 2 * np;
  uint8_t rgba[2 * MAX_POINTS * 4];
  vx_octree_colors(&t, L, p, n, rgba);
  uint32_t *xyz = (uint32_t *)malloc((size_t)(cells + 1) * 3 * sizeof(uint32_t));
  uint8_t *lvl = (uint8_t *)malloc((size_t)cells + 1);
  if (!xyz || !lvl) abort();
  cell_positions(&t, xyz, lvl);
  for (size_t i = 0; i < n; i++) {
    uint32_t got = le32(rgba + 4 * i), want = brute(&t, xyz, lvl, cells, L, p + 3 * i);
    if (got != want) {
      fprintf(stderr, "fuzz_color: level %u point %g %g %g: %08x, brute force %08x\n", L,
              (double)p[3 * i], (double)p[3 * i + 1], (double)p[3 * i + 2], got, want);
      abort();
    }
  }
  free(xyz);
  free(lvl);
  vx_octree_free(&t);
  return 0;
}
